package builtin_test

import (
	"errors"
	"testing"

	"github.com/sluice-io/sluice/connectors"
	"github.com/sluice-io/sluice/connectors/builtin"
)

func TestRegistryNames(t *testing.T) {
	reg := builtin.Registry()
	for name, want := range map[string]connectors.Type{
		"org.apache.kafka.connect.file.FileStreamSourceConnector": connectors.Source,
		"FileStreamSourceConnector":                               connectors.Source,
		"FileStreamSource":                                        connectors.Source,
		"org.apache.kafka.connect.file.FileStreamSinkConnector":   connectors.Sink,
		"FileStreamSinkConnector":                                 connectors.Sink,
		"FileStreamSink":                                          connectors.Sink,
		"io.sluice.connect.datagen.DatagenConnector":              connectors.Source,
		"DatagenConnector":                                        connectors.Source,
		"Datagen":                                                 connectors.Source,
		"io.confluent.connect.jdbc.JdbcSourceConnector":           connectors.Source,
		"JdbcSourceConnector":                                     connectors.Source,
		"JdbcSource":                                              connectors.Source,
		"PostgresSource":                                          connectors.Source,
		"io.confluent.connect.jdbc.JdbcSinkConnector":             connectors.Sink,
		"JdbcSinkConnector":                                       connectors.Sink,
		"PostgresSink":                                            connectors.Sink,
		"io.debezium.connector.postgresql.PostgresConnector":      connectors.Source,
		"PostgresConnector":                                       connectors.Source,
		"PostgresCdc":                                             connectors.Source,
		"DebeziumPostgres":                                        connectors.Source,
	} {
		p, err := reg.Lookup(name)
		if err != nil {
			t.Errorf("Lookup(%q): %v", name, err)
			continue
		}
		if p.Type != want || p.Version == "" {
			t.Errorf("Lookup(%q) = %s %s %q", name, p.Class, p.Type, p.Version)
		}
		c := p.New()
		switch want {
		case connectors.Source:
			_, ok := c.(connectors.SourceConnector)
			if !ok {
				t.Errorf("%s: %T is not a source connector", name, c)
			}
		case connectors.Sink:
			_, ok := c.(connectors.SinkConnector)
			if !ok {
				t.Errorf("%s: %T is not a sink connector", name, c)
			}
		}
	}
	if n := len(reg.Plugins()); n != 6 {
		t.Errorf("%d plugins, want 6", n)
	}
	var unknown *connectors.UnknownClassError
	if _, err := reg.Lookup("FileStream"); !errors.As(err, &unknown) || len(unknown.Known) != 6 {
		t.Errorf("Lookup of an unknown class: %v", err)
	}
}

func TestRegistryIsFresh(t *testing.T) {
	a, b := builtin.Registry(), builtin.Registry()
	extra := connectors.Plugin{Class: "com.example.Extra", Type: connectors.Sink, New: func() connectors.Connector { return nil }}
	if err := a.Register(extra); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Lookup("Extra"); err == nil {
		t.Fatal("a plugin added to one registry shows up in another")
	}
}
