// Package metricstest scrapes a worker's /metrics and checks it against the
// metric names issue 14 lists, for the tests of internal/metrics and of the
// worker.
package metricstest

import (
	"fmt"
	"io"
	"net/http"
	"slices"
	"sort"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Family is the type and label names a metric family must have.
type Family struct {
	Type   dto.MetricType
	Labels []string // sorted
}

var (
	gauge   = dto.MetricType_GAUGE
	counter = dto.MetricType_COUNTER
	task    = []string{"connector", "task"}
)

// Worker are the worker-level families every worker serves.
var Worker = map[string]Family{
	"kafka_connect_worker_connector_count":                        {gauge, nil},
	"kafka_connect_worker_task_count":                             {gauge, nil},
	"kafka_connect_worker_connector_startup_attempts_total":       {counter, nil},
	"kafka_connect_worker_connector_startup_success_total":        {counter, nil},
	"kafka_connect_worker_connector_startup_failure_total":        {counter, nil},
	"kafka_connect_worker_task_startup_attempts_total":            {counter, nil},
	"kafka_connect_worker_task_startup_success_total":             {counter, nil},
	"kafka_connect_worker_task_startup_failure_total":             {counter, nil},
	"kafka_connect_worker_rebalance_completed_rebalances_total":   {counter, nil},
	"kafka_connect_worker_rebalance_rebalancing":                  {gauge, nil},
	"kafka_connect_worker_rebalance_epoch":                        {gauge, nil},
	"kafka_connect_worker_rebalance_time_since_last_rebalance_ms": {gauge, nil},
	"kafka_connect_worker_rebalance_rebalance_avg_time_ms":        {gauge, nil},
	"kafka_connect_worker_rebalance_rebalance_max_time_ms":        {gauge, nil},
	"go_goroutines": {gauge, nil},
}

// Running are the families a worker running a source and a sink task
// serves: per connector, per task, status and Sluice's own.
var Running = map[string]Family{
	"kafka_connect_worker_connector_total_task_count":      {gauge, []string{"connector"}},
	"kafka_connect_worker_connector_running_task_count":    {gauge, []string{"connector"}},
	"kafka_connect_worker_connector_paused_task_count":     {gauge, []string{"connector"}},
	"kafka_connect_worker_connector_failed_task_count":     {gauge, []string{"connector"}},
	"kafka_connect_worker_connector_unassigned_task_count": {gauge, []string{"connector"}},
	"kafka_connect_worker_connector_destroyed_task_count":  {gauge, []string{"connector"}},
	"kafka_connect_worker_connector_restarting_task_count": {gauge, []string{"connector"}},
	"kafka_connect_connector_status":                       {gauge, []string{"connector", "status"}},
	"kafka_connect_connector_task_status":                  {gauge, []string{"connector", "status", "task"}},

	"kafka_connect_connector_task_offset_commit_success_percentage": {gauge, task},
	"kafka_connect_connector_task_offset_commit_failure_percentage": {gauge, task},
	"kafka_connect_connector_task_offset_commit_avg_time_ms":        {gauge, task},
	"kafka_connect_connector_task_offset_commit_max_time_ms":        {gauge, task},
	"kafka_connect_connector_task_batch_size_avg":                   {gauge, task},
	"kafka_connect_connector_task_batch_size_max":                   {gauge, task},
	"kafka_connect_connector_task_running_ratio":                    {gauge, task},
	"kafka_connect_connector_task_pause_ratio":                      {gauge, task},

	"kafka_connect_source_task_source_record_poll_total":   {counter, task},
	"kafka_connect_source_task_source_record_poll_rate":    {gauge, task},
	"kafka_connect_source_task_source_record_write_total":  {counter, task},
	"kafka_connect_source_task_source_record_write_rate":   {gauge, task},
	"kafka_connect_source_task_source_record_active_count": {gauge, task},
	"kafka_connect_source_task_poll_batch_avg_time_ms":     {gauge, task},
	"kafka_connect_source_task_poll_batch_max_time_ms":     {gauge, task},

	"kafka_connect_sink_task_sink_record_read_total":         {counter, task},
	"kafka_connect_sink_task_sink_record_read_rate":          {gauge, task},
	"kafka_connect_sink_task_sink_record_send_total":         {counter, task},
	"kafka_connect_sink_task_sink_record_send_rate":          {gauge, task},
	"kafka_connect_sink_task_put_batch_avg_time_ms":          {gauge, task},
	"kafka_connect_sink_task_put_batch_max_time_ms":          {gauge, task},
	"kafka_connect_sink_task_offset_commit_completion_total": {counter, task},
	"kafka_connect_sink_task_offset_commit_completion_rate":  {gauge, task},
	"kafka_connect_sink_task_sink_record_lag_max":            {gauge, task},
	"kafka_connect_sink_task_partition_count":                {gauge, task},

	"kafka_connect_task_error_total_record_errors":              {gauge, task},
	"kafka_connect_task_error_total_record_failures":            {gauge, task},
	"kafka_connect_task_error_total_records_skipped":            {gauge, task},
	"kafka_connect_task_error_total_errors_logged":              {gauge, task},
	"kafka_connect_task_error_deadletterqueue_produce_requests": {gauge, task},
	"kafka_connect_task_error_deadletterqueue_produce_failures": {gauge, task},
	"kafka_connect_task_error_total_retries":                    {gauge, task},
	"kafka_connect_task_error_last_error_timestamp":             {gauge, task},

	"sluice_sink_partition_lag":  {gauge, []string{"connector", "partition", "task", "topic"}},
	"sluice_actor_mailbox_depth": {gauge, []string{"actor"}},
}

// Scrape gets url (a /metrics) as Prometheus text, with client's
// authentication if any, and parses it with the Prometheus text parser.
func Scrape(client *http.Client, url string, header http.Header) (map[string]*dto.MetricFamily, error) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return nil, fmt.Errorf("GET %s: %s: %s", url, resp.Status, b)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		return nil, fmt.Errorf("GET %s: content type %q, want Prometheus text", url, ct)
	}
	parser := expfmt.NewTextParser(model.LegacyValidation)
	return parser.TextToMetricFamilies(resp.Body)
}

// Check reports every family of want missing from got or with another type,
// or one of whose series has other label names.
func Check(got map[string]*dto.MetricFamily, want map[string]Family) []string {
	var problems []string
	for name, w := range want {
		f, ok := got[name]
		if !ok {
			problems = append(problems, name+": missing")
			continue
		}
		if f.GetType() != w.Type {
			problems = append(problems, fmt.Sprintf("%s: type %s, want %s", name, f.GetType(), w.Type))
		}
		for _, m := range f.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName())
			}
			sort.Strings(labels)
			if !slices.Equal(labels, w.Labels) {
				problems = append(problems, fmt.Sprintf("%s: labels %v, want %v", name, labels, w.Labels))
				break
			}
		}
	}
	sort.Strings(problems)
	return problems
}

// Value is the value of the series of family name whose labels include
// every pair of match, and whether there is one.
func Value(got map[string]*dto.MetricFamily, name string, match map[string]string) (float64, bool) {
	f, ok := got[name]
	if !ok {
		return 0, false
	}
series:
	for _, m := range f.GetMetric() {
		have := map[string]string{}
		for _, l := range m.GetLabel() {
			have[l.GetName()] = l.GetValue()
		}
		for k, v := range match {
			if have[k] != v {
				continue series
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		case m.Untyped != nil:
			return m.Untyped.GetValue(), true
		}
	}
	return 0, false
}
