package schemaregistry

import "fmt"

// apiError is an error answer in Confluent's shape: the HTTP status and
// Confluent's error_code, whose first three digits are the status.
type apiError struct {
	status int
	code   int
	msg    string
}

func (e *apiError) Error() string { return e.msg }

func errSubjectNotFound(s string) error {
	return &apiError{404, 40401, fmt.Sprintf("Subject '%s' not found.", s)}
}

func errVersionNotFound(v string) error {
	return &apiError{404, 40402, fmt.Sprintf("Version %s not found.", v)}
}

func errSchemaNotFound(id int) error {
	return &apiError{404, 40403, fmt.Sprintf("Schema %d not found", id)}
}

var errSchemaNotInSubject = &apiError{404, 40403, "Schema not found"}

func errSubjectSoftDeleted(s string) error {
	return &apiError{404, 40404, fmt.Sprintf("Subject '%s' was soft deleted. Set permanent=true to delete permanently", s)}
}

func errSubjectNotSoftDeleted(s string) error {
	return &apiError{404, 40405, fmt.Sprintf("Subject '%s' was not deleted first before being permanently deleted", s)}
}

func errVersionSoftDeleted(s string, v int) error {
	return &apiError{404, 40406, fmt.Sprintf("Subject '%s' Version %d was soft deleted. Set permanent=true to delete permanently", s, v)}
}

func errVersionNotSoftDeleted(s string, v int) error {
	return &apiError{404, 40407, fmt.Sprintf("Subject '%s' Version %d was not deleted first before being permanently deleted", s, v)}
}

func errNoSubjectCompatibility(s string) error {
	return &apiError{404, 40408, fmt.Sprintf("Subject '%s' does not have subject-level compatibility configured", s)}
}

func errNoSubjectMode(s string) error {
	return &apiError{404, 40409, fmt.Sprintf("Subject '%s' does not have subject-level mode configured", s)}
}

func errIncompatible(subject string, problems []string) error {
	return &apiError{409, 409, fmt.Sprintf("Schema being registered is incompatible with an earlier schema for subject %q, details: %q", subject, problems)}
}

func errInvalidSchema(err error) error {
	return &apiError{422, 42201, "Invalid schema: " + err.Error()}
}

func errInvalidVersion(v string) error {
	return &apiError{422, 42202, fmt.Sprintf("The specified version '%s' is not a valid version id. Allowed values are between [1, 2^31-1] and the string \"latest\"", v)}
}

func errInvalidCompatibility(level string) error {
	return &apiError{422, 42203, fmt.Sprintf("Invalid compatibility level %q. Valid values are NONE, BACKWARD, FORWARD, FULL, BACKWARD_TRANSITIVE, FORWARD_TRANSITIVE and FULL_TRANSITIVE", level)}
}

func errInvalidMode(mode string) error {
	return &apiError{422, 42204, fmt.Sprintf("Invalid mode %q. Valid values are READWRITE, READONLY and IMPORT", mode)}
}

func errNotPermitted(msg string) error { return &apiError{422, 42205, msg} }

func errReferenceExists(subject string, version int, ids []int) error {
	return &apiError{422, 42206, fmt.Sprintf("One or more references exist to the schema {subject=%s,version=%d}: schema ids %v", subject, version, ids)}
}

func errBadRequest(msg string) error { return &apiError{400, 400, msg} }

func errUnprocessable(msg string) error { return &apiError{422, 422, msg} }
