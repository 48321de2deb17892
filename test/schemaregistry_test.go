package test

// The Schema Registry as processes: the one `sluice dev` brings, across a
// restart of dev, and `sluice schema-registry` instances on `sluice
// broker`, one of them killed and started again.

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluice-io/sluice/internal/proctest"
)

const registrySchema = `{"type":"record","name":"Order","namespace":"shop","fields":[{"name":"id","type":"long"}]}`

// register posts schema under subject at the registry and returns its id.
func register(t *testing.T, registry, subject, schema string) int {
	t.Helper()
	b, _ := json.Marshal(map[string]string{"schema": schema})
	code, body := mustSend(t, "POST", registry+"/subjects/"+subject+"/versions", string(b))
	if code != 200 {
		t.Fatalf("register %s at %s: %d %s", subject, registry, code, body)
	}
	var got struct{ ID int }
	if err := json.Unmarshal(body, &got); err != nil || got.ID < 1 {
		t.Fatalf("register %s: answer %s", subject, body)
	}
	return got.ID
}

// wantRegistryAnswer requires GET path at the registry to answer 200 with
// want (JSON compared as text).
func wantRegistryAnswer(t *testing.T, registry, path, want string) {
	t.Helper()
	code, body := mustSend(t, "GET", registry+path, "")
	if code != 200 || strings.TrimSpace(string(body)) != want {
		t.Fatalf("GET %s%s: %d %s, want 200 %s", registry, path, code, body, want)
	}
}

func TestSchemaRegistryDevRestart(t *testing.T) {
	dir := t.TempDir()
	d := startDev(t, filepath.Join(dir, "data"))
	registry := "http://" + d.registryAddr
	banner, _ := os.ReadFile(d.Stdout)
	if !strings.Contains(string(banner), "registry      "+registry+"   (Confluent's Schema Registry API") {
		t.Fatalf("dev's banner does not give the registry's URL %s:\n%s", registry, banner)
	}
	id := register(t, registry, "orders-value", registrySchema)
	second := register(t, registry, "other-value", `"string"`)
	code, body := mustSend(t, "PUT", registry+"/config/orders-value", `{"compatibility":"FULL"}`)
	if code != 200 {
		t.Fatalf("PUT config: %d %s", code, body)
	}

	if code := d.Terminate(); code != 0 {
		t.Fatalf("sluice dev exited %d on SIGTERM, want 0", code)
	}
	d.restart()

	want, _ := json.Marshal(map[string]string{"schema": registrySchema})
	wantRegistryAnswer(t, registry, fmt.Sprintf("/schemas/ids/%d", id), string(want))
	wantRegistryAnswer(t, registry, "/subjects", `["orders-value","other-value"]`)
	wantRegistryAnswer(t, registry, "/config/orders-value", `{"compatibilityLevel":"FULL"}`)
	if again := register(t, registry, "orders-value", registrySchema); again != id {
		t.Fatalf("the same schema after the restart got id %d, want %d", again, id)
	}
	if next := register(t, registry, "third-value", `"int"`); next != second+1 {
		t.Fatalf("a new schema after the restart got id %d, want %d", next, second+1)
	}
}

func TestSchemaRegistryDevOff(t *testing.T) {
	d := startDev(t, filepath.Join(t.TempDir(), "data"), "--schema-registry-addr=off")
	banner, _ := os.ReadFile(d.Stdout)
	if strings.Contains(string(banner), "Schema Registry") || !strings.Contains(string(banner), "REST API") {
		t.Fatalf("--schema-registry-addr=off, but the banner names a registry:\n%s", banner)
	}
	if _, _, err := send("GET", "http://"+d.registryAddr+"/subjects", ""); err == nil {
		t.Fatalf("--schema-registry-addr=off, but %s answers", d.registryAddr)
	}
}

// startRegistryProc starts `sluice schema-registry` on addr against the
// broker and waits until it answers.
func startRegistryProc(t *testing.T, name, addr, kafkaAddr string) *proctest.Proc {
	t.Helper()
	p := startProc(t, name, nil, "schema-registry", "--bootstrap", kafkaAddr, "--addr", addr)
	waitFor(t, p.FailIfExited, startDeadline, 100*time.Millisecond, name+" answering", func() (bool, string) {
		code, body, err := send("GET", "http://"+addr+"/subjects", "")
		return err == nil && code == 200, fmt.Sprintf("%d %s %v", code, body, err)
	})
	return p
}

func TestSchemaRegistryProcesses(t *testing.T) {
	kafkaAddr := proctest.FreeAddr(t)
	startProc(t, "sluice-broker", nil, "broker", "--addr", kafkaAddr, "--data-dir", t.TempDir())
	addrA, addrB := proctest.FreeAddr(t), proctest.FreeAddr(t)
	a := startRegistryProc(t, "registry-a", addrA, kafkaAddr)
	startRegistryProc(t, "registry-b", addrB, kafkaAddr)
	regA, regB := "http://"+addrA, "http://"+addrB

	idA := register(t, regA, "orders-value", registrySchema)
	// b reads what a wrote, and gives a new schema the next id.
	want, _ := json.Marshal(map[string]string{"schema": registrySchema})
	wantRegistryAnswer(t, regB, fmt.Sprintf("/schemas/ids/%d", idA), string(want))
	idB := register(t, regB, "other-value", `"string"`)
	if idB != idA+1 {
		t.Fatalf("b gave id %d after a's %d", idB, idA)
	}

	a.Kill9()
	proctest.WaitPortsFree(t, addrA)
	startRegistryProc(t, "registry-a2", addrA, kafkaAddr)
	wantRegistryAnswer(t, regA, "/subjects", `["orders-value","other-value"]`)
	wantRegistryAnswer(t, regA, fmt.Sprintf("/schemas/ids/%d", idB), `{"schema":"\"string\""}`)
	if id := register(t, regA, "third-value", `"int"`); id != idB+1 {
		t.Fatalf("the restarted instance gave id %d, want %d", id, idB+1)
	}
}

func TestSchemaRegistryBasicAuthProcess(t *testing.T) {
	kafkaAddr := proctest.FreeAddr(t)
	startProc(t, "sluice-broker", nil, "broker", "--addr", kafkaAddr, "--data-dir", t.TempDir())
	users := filepath.Join(t.TempDir(), "users.properties")
	if err := os.WriteFile(users, []byte("svc=svc-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := proctest.FreeAddr(t)
	p := startProc(t, "registry-auth", nil, "schema-registry", "--bootstrap", kafkaAddr, "--addr", addr, "--users-file", users)
	waitFor(t, p.FailIfExited, startDeadline, 100*time.Millisecond, "registry answering", func() (bool, string) {
		code, body, err := send("GET", "http://"+addr+"/subjects", "")
		return err == nil && code == 401, fmt.Sprintf("%d %s %v", code, body, err)
	})
	code, body := mustSend(t, "GET", "http://svc:svc-secret@"+addr+"/subjects", "")
	if code != 200 || strings.TrimSpace(string(body)) != "[]" {
		t.Fatalf("with credentials: %d %s, want 200 []", code, body)
	}
	if code, body := mustSend(t, "GET", "http://svc:wrong@"+addr+"/subjects", ""); code != 401 || !strings.Contains(string(body), `"error_code":401`) {
		t.Fatalf("wrong password: %d %s, want 401 with error_code 401", code, body)
	}
}
