package eval

import (
	"math"
	"testing"
)

// Wilson bounds against values computed by hand from
// (p + z²/2n ± z·sqrt(p(1-p)/n + z²/4n²)) / (1 + z²/n), z = 1.959964.
func TestWilson(t *testing.T) {
	tests := []struct {
		x, n      int
		low, high float64
	}{
		{8, 10, 0.4901625, 0.9433178},  // textbook example: 0.490 to 0.943
		{18, 20, 0.6989664, 0.9721335}, // 0.9 point estimate
		{19, 20, 0.7638688, 0.9911186},
		{20, 20, 0.8388748, 1},
		{15, 15, 0.7961167, 1},
		{0, 10, 0, 0.2775328},
		{1, 2, 0.0945312, 0.9054688},
		{0, 0, 0, 1},
	}
	for _, tt := range tests {
		got := Wilson(tt.x, tt.n)
		if math.Abs(got.Low-tt.low) > 1e-6 || math.Abs(got.High-tt.high) > 1e-6 {
			t.Errorf("Wilson(%d, %d) = [%.7f, %.7f], want [%.7f, %.7f]", tt.x, tt.n, got.Low, got.High, tt.low, tt.high)
		}
	}
}

// Exact McNemar p-values computed by hand: p = min(1, 2·Σ_{i≤min(b,c)} C(n,i)/2ⁿ).
func TestMcNemarExact(t *testing.T) {
	tests := []struct {
		b, c int
		p    float64
	}{
		{0, 0, 1},
		{0, 1, 1},                    // 2·(1/2) = 1
		{0, 5, 0.0625},               // 2·1/32
		{5, 0, 0.0625},               // symmetric
		{1, 9, 0.021484375},          // 2·(1+10)/1024
		{2, 8, 0.109375},             // 2·(1+10+45)/1024
		{3, 3, 1},                    // 2·42/64 > 1
		{0, 10, 0.001953125},         // 2/1024
		{4, 16, 0.01181793212890625}, // 2·(1+20+190+1140+4845)/2²⁰ = 12392/1048576
	}
	for _, tt := range tests {
		if got := McNemarExact(tt.b, tt.c); math.Abs(got-tt.p) > 1e-15 {
			t.Errorf("McNemarExact(%d, %d) = %v, want %v", tt.b, tt.c, got, tt.p)
		}
	}
	// Large discordant counts do not overflow or underflow.
	if p := McNemarExact(500, 600); p <= 0 || p >= 0.01 {
		t.Errorf("McNemarExact(500, 600) = %v, want a small positive p", p)
	}
}

// Nearest-rank percentiles.
func TestPercentiles(t *testing.T) {
	vs := []int64{50, 10, 40, 20, 30}
	for q, want := range map[float64]int64{50: 30, 95: 50, 20: 10, 100: 50, 1: 10} {
		if got := percentileInt(vs, q); got != want {
			t.Errorf("p%v = %d, want %d", q, got, want)
		}
	}
	if percentileInt(nil, 50) != 0 || percentileFloat(nil, 95) != 0 {
		t.Error("empty percentiles are not 0")
	}
	twenty := make([]int64, 20)
	for i := range twenty {
		twenty[i] = int64(i + 1)
	}
	if got := percentileInt(twenty, 95); got != 19 {
		t.Errorf("p95 of 1..20 = %d, want 19", got)
	}
	if got := percentileFloat([]float64{0.3, 0.1, 0.2}, 50); got != 0.2 {
		t.Errorf("float p50 = %v", got)
	}
}
