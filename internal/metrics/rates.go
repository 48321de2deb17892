package metrics

import "time"

// Rates are computed at read time from samples of a task's counters taken
// when something reads them (a scrape, the dashboard, `sluice top`), at most
// one a second: the record path never pays for them.
const (
	// rateWindowSpan is how far back a rate looks, as TaskRate promises (~5-10 s).
	rateWindowSpan = 10 * time.Second
	// sampleEvery is the least time between two stored samples.
	sampleEvery = time.Second
	// windowSamples holds more than rateWindowSpan/sampleEvery samples so that
	// one older than the window is kept as the base for slow readers.
	windowSamples = 16
)

type counts struct {
	polled, written, read, put, commitsCompleted int64
}

type rateSample struct {
	at time.Time
	counts
}

type rateWindow struct {
	samples [windowSamples]rateSample
	n, next int
}

// perSecond is the per-second change of each count from the best base sample
// to now, storing now as a sample when the newest is older than sampleEvery.
// The base is the oldest sample at least sampleEvery old inside the window;
// failing that, the newest older than the window; failing that, the task's
// start with every count at zero (a lifetime rate).
func (w *rateWindow) perSecond(now time.Time, cur counts, started time.Time) rates {
	base := rateSample{at: started}
	var inWindow, older *rateSample
	for i := 0; i < w.n; i++ {
		s := &w.samples[(w.next-1-i+windowSamples)%windowSamples] // newest first
		age := now.Sub(s.at)
		switch {
		case age > rateWindowSpan:
			if older == nil {
				older = s
			}
		case age >= sampleEvery:
			inWindow = s // keeps the oldest in the window
		}
	}
	if inWindow != nil {
		base = *inWindow
	} else if older != nil {
		base = *older
	}
	if w.n == 0 || now.Sub(w.samples[(w.next-1+windowSamples)%windowSamples].at) >= sampleEvery {
		w.samples[w.next] = rateSample{at: now, counts: cur}
		w.next = (w.next + 1) % windowSamples
		if w.n < windowSamples {
			w.n++
		}
	}
	secs := now.Sub(base.at).Seconds()
	if secs <= 0 {
		return rates{}
	}
	return rates{
		polled:  float64(cur.polled-base.polled) / secs,
		written: float64(cur.written-base.written) / secs,
		read:    float64(cur.read-base.read) / secs,
		put:     float64(cur.put-base.put) / secs,

		commitsCompleted: float64(cur.commitsCompleted-base.commitsCompleted) / secs,
	}
}

// rates are records per second of each count.
type rates struct {
	polled, written, read, put, commitsCompleted float64
}

func (t *Task) counts() counts {
	return counts{polled: t.polled.Load(), written: t.written.Load(), read: t.read.Load(), put: t.put.Load(),
		commitsCompleted: t.commitsCompleted.Load()}
}
