// Package controlpb holds the protobuf messages workers and the admin
// commands exchange through the actor cluster: admin requests and their
// answers (REST's status code and JSON body), worker info, and the task
// configs a follower sends to the leader. control.pb.go is generated from
// control.proto by `just proto`; edit the .proto, never the .pb.go.
package controlpb

// AdminActorName is the name of every worker's admin actor, to which admin
// requests are sent: part of the protocol, like the messages.
const AdminActorName = "sluice-admin"
