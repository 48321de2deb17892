package converters

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

// TestUnscaledFastPathMatchesBigInt checks the int64 path of unscaledOf
// against the big.Int path on the values at its edges (the int64 limits,
// scales 0 to 18, denominators that do and do not divide the scale's power
// of ten) and on random decimals: the same result, or the same refusal.
func TestUnscaledFastPathMatchesBigInt(t *testing.T) {
	nums := []int64{0, 1, -1, 7, -7, 12345, -12345, 999999999999999999, math.MaxInt64, math.MinInt64,
		math.MaxInt64 / 10, math.MinInt64 / 10, math.MaxInt64/100 + 1, math.MinInt64/100 - 1}
	dens := []int64{1, 2, 4, 5, 8, 10, 16, 25, 3, 7, 1000, 1 << 20, 1000000000000000000}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 2000; i++ {
		nums = append(nums, rng.Int64()>>rng.IntN(63)*int64(1-2*rng.IntN(2)))
	}
	fast := 0
	for _, n := range nums {
		for _, d := range dens {
			r := new(big.Rat).SetFrac(big.NewInt(n), big.NewInt(d))
			for scale := -2; scale <= 20; scale++ {
				want, wantErr := unscaledBig(r, scale)
				got, err := unscaledOf(r, scale)
				if (err != nil) != (wantErr != nil) {
					t.Fatalf("%s at scale %d: error %v, the big.Int path says %v", r.RatString(), scale, err, wantErr)
				}
				if err != nil {
					if err.Error() != wantErr.Error() {
						t.Fatalf("%s at scale %d: error %q, want %q", r.RatString(), scale, err, wantErr)
					}
					continue
				}
				if got.Cmp(want) != 0 {
					t.Fatalf("%s at scale %d: %s, want %s", r.RatString(), scale, got, want)
				}
				if _, ok := unscaledInt64(r, scale); ok {
					fast++
				}
			}
		}
	}
	// The fast path must actually be taken for ordinary decimals, or this
	// test compares the big.Int path with itself.
	if fast < 10000 {
		t.Fatalf("the int64 path answered %d times; expected it for most small decimals", fast)
	}
}

func BenchmarkUnscaledOf(b *testing.B) {
	r := new(big.Rat).SetFrac64(123456789, 100) // a numeric(12,2)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := unscaledOf(r, 2); err != nil {
			b.Fatal(err)
		}
	}
}

// TestTwosComplementInt64MatchesBigInt checks the int64 encoding of a
// Decimal's unscaled value against the big.Int one (Java's
// BigInteger.toByteArray) at every byte-length edge and on random values.
func TestTwosComplementInt64MatchesBigInt(t *testing.T) {
	vals := []int64{0, 1, -1, math.MaxInt64, math.MinInt64}
	for sh := 0; sh < 63; sh++ {
		p := int64(1) << sh
		vals = append(vals, p, p-1, p+1, -p, -p-1, -p+1)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for range 5000 {
		vals = append(vals, rng.Int64()>>rng.IntN(63)*int64(1-2*rng.IntN(2)))
	}
	for _, v := range vals {
		want := twosComplement(big.NewInt(v))
		if got := appendTwosComplementInt64(nil, v); string(got) != string(want) {
			t.Fatalf("%d: % x, want % x", v, got, want)
		}
	}
}
