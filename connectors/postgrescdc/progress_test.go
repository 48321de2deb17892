package postgrescdc

import "testing"

// The runtime may store a transaction's last record and call Commit before
// the reader has decoded that transaction's COMMIT: the transaction must
// still be confirmed when the reader records it, without another Commit.
func TestProgressConfirmsWhatAnEarlierCommitStored(t *testing.T) {
	var p progress
	// The stored offset is the last change (lsn 120) of the transaction
	// committing at 150, after the one that committed at 100.
	if end := p.confirm(storedPosition{commitLSN: 100, lsn: 120, change: true}); end != 0 {
		t.Fatalf("confirm with nothing finished = %d", end)
	}
	if end := p.add(finished{commitLSN: 150, prevCommit: 100, lastLSN: 120, endLSN: 160}); end != 160 {
		t.Fatalf("add of the stored transaction = %d, want its end 160", end)
	}
	if !p.idle() {
		t.Fatal("the stored transaction is still pending")
	}
	// A transaction whose last change is past the stored offset waits.
	if end := p.add(finished{commitLSN: 250, prevCommit: 150, lastLSN: 220, endLSN: 260}); end != 0 {
		t.Fatalf("add of an unstored transaction = %d", end)
	}
	if p.idle() {
		t.Fatal("an unstored transaction counts as confirmed")
	}
	if end := p.confirm(storedPosition{commitLSN: 150, lsn: 220, change: true}); end != 260 {
		t.Fatalf("confirm of its last change = %d, want 260", end)
	}
}
