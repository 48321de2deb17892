package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/mattn/go-isatty"

	"github.com/sluice-io/sluice/internal/controlpb"
	"github.com/sluice-io/sluice/internal/ui"
)

const topHelp = `
sluice top shows every task of the cluster with its state, the worker that runs
it, its records per second (a source's polled records, a sink's records put)
and a sink's consumer lag (the most over its partitions; "-" for a source), refreshed every --interval until interrupted. On a
terminal the screen is cleared and redrawn; otherwise each refresh follows the
last, under a line with its time.

  sluice top                 live view
  sluice top -n 1            print once (also --once), for scripts
  sluice top --once -o json  the cluster view as JSON, as GET /ui/state answers

A task whose worker did not report its rates shows "-" instead of numbers.
`

func runTop(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := newAdminCmd("top", topHelp, stdout, stderr)
	var (
		count    int
		once     bool
		interval time.Duration
	)
	c.fs.IntVar(&count, "n", 0, "refresh this many times, then exit (0: until interrupted)")
	c.fs.BoolVar(&once, "once", false, "print once and exit (same as -n 1)")
	c.fs.DurationVar(&interval, "interval", time.Second, "how often the view refreshes")
	return runAdmin(ctx, c, args, func(ctx context.Context) error {
		if len(c.args) > 0 {
			return usageError{fmt.Errorf("unexpected argument %q", c.args[0])}
		}
		switch {
		case count < 0:
			return usageError{fmt.Errorf("-n must be 0 (until interrupted) or more, not %d", count)}
		case once && count > 1:
			return usageError{fmt.Errorf("--once and -n %d contradict each other", count)}
		case interval <= 0:
			return usageError{fmt.Errorf("--interval must be positive, not %s", interval)}
		case once:
			count = 1
		}
		clear := count != 1 && !c.json() && isTerminal(stdout)
		for i := 1; ; i++ {
			res, err := c.do(ctx, &controlpb.AdminRequest{Op: &controlpb.AdminRequest_ClusterView{ClusterView: &controlpb.ClusterView{}}})
			if err != nil {
				return err
			}
			if c.json() {
				if err := c.printJSON(res); err != nil {
					return err
				}
			} else {
				var v ui.View
				if err := decode(res, &v); err != nil {
					return err
				}
				switch {
				case clear:
					// Home, then clear the screen: the view redraws in place.
					fmt.Fprint(stdout, "\x1b[H\x1b[2J")
				case count != 1:
					fmt.Fprintf(stdout, "--- %s\n", time.Now().Format(time.TimeOnly))
				}
				if err := printTop(stdout, v); err != nil {
					return err
				}
			}
			if count > 0 && i >= count {
				return nil
			}
			select {
			case <-ctx.Done():
				return nil // interrupted: the view ends normally
			case <-time.After(interval):
			}
		}
	})
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && isatty.IsTerminal(f.Fd())
}

// printTop prints the view: a line about the workers, then one row per
// task, the busiest first.
func printTop(w io.Writer, v ui.View) error {
	alive, gone := []string{}, []string{}
	for _, wk := range v.Workers {
		name := wk.ID
		if wk.Leader {
			name += "*"
		}
		if wk.Alive {
			alive = append(alive, name)
		} else {
			gone = append(gone, name)
		}
	}
	fmt.Fprintf(w, "workers: %s (* leads)", dash(strings.Join(alive, ", ")))
	if len(gone) > 0 {
		fmt.Fprintf(w, "; gone: %s", strings.Join(gone, ", "))
	}
	fmt.Fprintf(w, "; served by %s at %s\n", v.Worker, v.Time.Local().Format(time.TimeOnly))
	for _, u := range v.Unreachable {
		fmt.Fprintf(w, "unreachable: %s\n", u)
	}
	type row struct {
		connector string
		task      ui.Task
	}
	var rows []row
	for _, c := range v.Connectors {
		for _, t := range c.Tasks {
			rows = append(rows, row{c.Name, t})
		}
	}
	if len(rows) == 0 {
		_, err := fmt.Fprintln(w, "No tasks.")
		return err
	}
	sort.SliceStable(rows, func(i, j int) bool {
		a, b := rows[i], rows[j]
		if a.task.RecordsPerSec != b.task.RecordsPerSec {
			return a.task.RecordsPerSec > b.task.RecordsPerSec
		}
		if a.connector != b.connector {
			return a.connector < b.connector
		}
		return a.task.ID < b.task.ID
	})
	tw := table(w)
	fmt.Fprintln(tw, "CONNECTOR\tTASK\tSTATE\tWORKER\tREC/S\tLAG\tTOTAL")
	for _, r := range rows {
		t := r.task
		rate, lag, total := "-", "-", "-"
		if t.Measured {
			rate, total = fmt.Sprintf("%.1f", t.RecordsPerSec), fmt.Sprint(t.Total)
		}
		if t.Measured && t.Lag >= 0 { // a source has no lag (-1)
			lag = fmt.Sprint(t.Lag)
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\n", r.connector, t.ID, t.State, dash(t.WorkerID), rate, lag, total)
	}
	return tw.Flush()
}
