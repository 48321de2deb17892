package datagen_test

import (
	"fmt"
	"strconv"
	"testing"

	"github.com/sluice-io/sluice/connectors"
	"github.com/sluice-io/sluice/connectors/conformance"
	"github.com/sluice-io/sluice/connectors/datagen"
)

func TestConformance(t *testing.T) {
	conformance.RunSource(t, conformance.SourceHarness{
		Plugin: datagen.Plugin(),
		Config: func(t *testing.T) map[string]string {
			return map[string]string{"topic": "gen", "max.records": "0", "value.size": "8"}
		},
		// Datagen's upstream is its record limit.
		Produce: func(t *testing.T, cfg map[string]string, n int) {
			m, err := strconv.ParseInt(cfg["max.records"], 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			cfg["max.records"] = strconv.FormatInt(m+int64(n), 10)
		},
		Identity: func(r *connectors.SourceRecord) (string, int64, error) {
			v, ok := r.Value.(*connectors.StructValue)
			if !ok {
				return "", 0, fmt.Errorf("value %T is not a struct", r.Value)
			}
			seq, ok := v.Get("seq").(int64)
			if !ok {
				return "", 0, fmt.Errorf("seq %T is not an int64", v.Get("seq"))
			}
			if off := r.SourceOffset()["seq"]; off != seq {
				return "", 0, fmt.Errorf("offset %v does not match seq %d", off, seq)
			}
			return fmt.Sprint(r.Partition["task"]), seq, nil
		},
		BatchSizeKey: datagen.BatchSizeKey,
	})
}
