package sluice_test

import (
	"context"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/sluice-io/sluice"
)

func TestWorkerStartsServesAndStops(t *testing.T) {
	broker, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	defer broker.Close()
	w, err := sluice.NewWorker(sluice.Config{Cluster: "embed", Bootstrap: broker.ListenAddrs(), RESTAddr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(20 * time.Second); !w.Ready(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("worker not ready after 20 s")
		}
	}
	resp, err := http.Get("http://" + w.RESTAddr() + "/")
	if err != nil {
		t.Fatal(err)
	}
	var info struct{ Version string }
	err = json.NewDecoder(resp.Body).Decode(&info)
	resp.Body.Close()
	if err != nil || info.Version == "" {
		t.Fatalf("GET / version %q, %v: want Sluice's version", info.Version, err)
	}
	resp, err = http.Get("http://" + w.RESTAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %d, want 200 (metrics are on by default)", resp.StatusCode)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := w.Stop(ctx); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if err := w.Stop(ctx); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
	select {
	case <-w.Done():
	default:
		t.Fatal("Done not closed after Stop")
	}
	if w.Err() != nil {
		t.Fatalf("Err after a clean stop: %v", w.Err())
	}
}

func TestBadConfigIsRefused(t *testing.T) {
	for _, cfg := range []sluice.Config{
		{Bootstrap: []string{"127.0.0.1:1"}},
		{Cluster: "c"},
		{Cluster: "c", Bootstrap: []string{"127.0.0.1:1"}, Props: map[string]string{"offset.storage.partitions": "many"}},
	} {
		cfg.RESTAddr = "127.0.0.1:0"
		if w, err := sluice.NewWorker(cfg); err == nil {
			w.Stop(context.Background())
			t.Errorf("NewWorker(%+v) succeeded", cfg)
		}
	}
}

// A start that retrying cannot fix ends in Done and Err, and Stop still
// releases the worker.
func TestStartFailureReportsThroughDoneAndErr(t *testing.T) {
	broker, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	defer broker.Close()
	// One broker cannot hold five replicas of the status topic.
	w, err := sluice.NewWorker(sluice.Config{
		Cluster: "broken", Bootstrap: broker.ListenAddrs(), RESTAddr: "127.0.0.1:0",
		Props: map[string]string{"status.storage.replication.factor": strconv.Itoa(5)},
	})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-w.Done():
	case <-time.After(20 * time.Second):
		t.Fatal("Done not closed after a start that cannot succeed")
	}
	if w.Err() == nil || !strings.Contains(w.Err().Error(), "replication factor") {
		t.Fatalf("Err = %v, want the replication factor named", w.Err())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := w.Stop(ctx); err != nil {
		t.Fatalf("Stop after a failed start: %v", err)
	}
}

// The runtime is internal so that it can change: no exported identifier of
// package sluice may name an internal package's type, not even through an
// alias, or users would depend on it without being able to read its docs.
func TestPublicSignaturesNameNoInternalType(t *testing.T) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "sluice.go", nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	internal := map[string]bool{} // local names of imported internal packages
	for _, imp := range f.Imports {
		path, _ := strconv.Unquote(imp.Path.Value)
		if strings.Contains(path, "/internal/") {
			name := path[strings.LastIndex(path, "/")+1:]
			if imp.Name != nil {
				name = imp.Name.Name
			}
			internal[name] = true
		}
	}
	check := func(where string, n ast.Node) {
		ast.Inspect(n, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok {
				if id, ok := sel.X.(*ast.Ident); ok && internal[id.Name] {
					t.Errorf("%s: exported %s names %s.%s", fset.Position(sel.Pos()), where, id.Name, sel.Sel.Name)
				}
			}
			return true
		})
	}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Name.IsExported() && (d.Recv == nil || ast.IsExported(strings.TrimPrefix(recvType(d.Recv), "*"))) {
				check(d.Name.Name, d.Type)
			}
		case *ast.GenDecl:
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					if !s.Name.IsExported() {
						continue
					}
					if st, ok := s.Type.(*ast.StructType); ok {
						for _, fld := range st.Fields.List {
							for _, n := range fld.Names {
								if n.IsExported() {
									check(s.Name.Name+"."+n.Name, fld.Type)
								}
							}
						}
						continue
					}
					check(s.Name.Name, s.Type)
				case *ast.ValueSpec:
					for _, n := range s.Names {
						if n.IsExported() {
							if s.Type != nil {
								check(n.Name, s.Type)
							}
							for _, v := range s.Values {
								check(n.Name, v)
							}
						}
					}
				}
			}
		}
	}
}

// recvType renders a receiver list's type, as "*Worker".
func recvType(fl *ast.FieldList) string {
	if fl == nil || len(fl.List) == 0 {
		return ""
	}
	switch x := fl.List[0].Type.(type) {
	case *ast.StarExpr:
		if id, ok := x.X.(*ast.Ident); ok {
			return "*" + id.Name
		}
	case *ast.Ident:
		return x.Name
	}
	return ""
}
