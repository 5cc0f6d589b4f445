package eval

import (
	"math"
	"math/big"
	"sort"
)

// z95 is the standard normal quantile for a two-sided 95% interval.
const z95 = 1.959963984540054

// Wilson returns the Wilson score 95% interval for successes out of n
// trials. With n = 0 nothing is known and the interval is [0, 1].
func Wilson(successes, n int) Interval {
	if n <= 0 {
		return Interval{Low: 0, High: 1}
	}
	p := float64(successes) / float64(n)
	nn := float64(n)
	z2 := z95 * z95
	denom := 1 + z2/nn
	center := (p + z2/(2*nn)) / denom
	half := z95 / denom * math.Sqrt(p*(1-p)/nn+z2/(4*nn*nn))
	lo, hi := center-half, center+half
	if lo < 0 {
		lo = 0
	}
	if hi > 1 {
		hi = 1
	}
	// The bounds are exact at the edges; keep rounding noise out of them.
	if successes == 0 {
		lo = 0
	}
	if successes == n {
		hi = 1
	}
	return Interval{Low: lo, High: hi}
}

// McNemarExact is the two-sided exact McNemar test on discordant pair
// counts b and c: under the null each discordant pair is a fair coin, so
// p = min(1, 2 * P(X <= min(b, c))) with X ~ Binomial(b+c, 1/2). With no
// discordant pairs p = 1. The sum is computed exactly with big integers.
func McNemarExact(b, c int) float64 {
	n := b + c
	if n == 0 {
		return 1
	}
	k := min(b, c)
	sum := new(big.Int)
	coef := big.NewInt(1) // C(n, 0)
	for i := 0; i <= k; i++ {
		if i > 0 {
			coef.Mul(coef, big.NewInt(int64(n-i+1)))
			coef.Quo(coef, big.NewInt(int64(i)))
		}
		sum.Add(sum, coef)
	}
	// p = 2 * sum / 2^n = sum / 2^(n-1)
	den := new(big.Int).Lsh(big.NewInt(1), uint(n-1))
	p, _ := new(big.Rat).SetFrac(sum, den).Float64()
	if p > 1 {
		p = 1
	}
	return p
}

// percentileInt is the nearest-rank percentile (0 < q <= 100) of vs.
func percentileInt(vs []int64, q float64) int64 {
	if len(vs) == 0 {
		return 0
	}
	s := append([]int64(nil), vs...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[rank(len(s), q)]
}

// percentileFloat is the nearest-rank percentile of vs.
func percentileFloat(vs []float64, q float64) float64 {
	if len(vs) == 0 {
		return 0
	}
	s := append([]float64(nil), vs...)
	sort.Float64s(s)
	return s[rank(len(s), q)]
}

// rank is the 0-based index of the nearest-rank q-th percentile of n
// sorted values.
func rank(n int, q float64) int {
	r := int(math.Ceil(q / 100 * float64(n)))
	if r < 1 {
		r = 1
	}
	if r > n {
		r = n
	}
	return r - 1
}

// mean of vs (0 when empty).
func mean(vs []float64) float64 {
	if len(vs) == 0 {
		return 0
	}
	var s float64
	for _, v := range vs {
		s += v
	}
	return s / float64(len(vs))
}
