package number

import (
	"encoding/json"
	"math"
	"testing"
)

func TestReads(t *testing.T) {
	type got struct {
		f   float64
		fok bool
		i   int64
		iok bool
		w   int64
		wok bool
	}
	tests := []struct {
		name string
		in   any
		want got
	}{
		{"int", 7, got{7, true, 7, true, 7, true}},
		{"negative int64", int64(-3), got{-3, true, -3, true, -3, true}},
		{"whole float64", 4.0, got{4, true, 4, true, 4, true}},
		{"fractional float64", 2.75, got{2.75, true, 2, true, 2, false}},
		{"negative fraction truncates toward zero", -2.75, got{-2.75, true, -2, true, -2, false}},
		{"float64 at 2^53 is not whole", float64(1 << 53), got{1 << 53, true, 1 << 53, true, 1 << 53, false}},
		{"json.Number integer", json.Number("640"), got{640, true, 640, true, 640, true}},
		{"json.Number fraction", json.Number("0.0031"), got{0.0031, true, 0, true, 0, false}},
		{"json.Number 1.5", json.Number("1.5"), got{1.5, true, 1, true, 0, false}},
		{"json.Number not a number", json.Number("x"), got{0, false, 0, false, 0, false}},
		{"string", "5", got{0, false, 0, false, 0, false}},
		{"bool", true, got{0, false, 0, false, 0, false}},
		{"nil", nil, got{0, false, 0, false, 0, false}},
		{"int32 is not read", int32(5), got{0, false, 0, false, 0, false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var g got
			g.f, g.fok = Float(tt.in)
			g.i, g.iok = Int(tt.in)
			g.w, g.wok = Whole(tt.in)
			if g.f != tt.want.f || g.fok != tt.want.fok {
				t.Errorf("Float(%#v) = %v, %v; want %v, %v", tt.in, g.f, g.fok, tt.want.f, tt.want.fok)
			}
			if g.i != tt.want.i || g.iok != tt.want.iok {
				t.Errorf("Int(%#v) = %v, %v; want %v, %v", tt.in, g.i, g.iok, tt.want.i, tt.want.iok)
			}
			if g.wok != tt.want.wok || (g.wok && g.w != tt.want.w) {
				t.Errorf("Whole(%#v) = %v, %v; want %v, %v", tt.in, g.w, g.wok, tt.want.w, tt.want.wok)
			}
		})
	}
}

func TestNaNIsNotWhole(t *testing.T) {
	if _, ok := Whole(math.NaN()); ok {
		t.Error("Whole(NaN) ok; want not whole")
	}
	if _, ok := Whole(math.Inf(1)); ok {
		t.Error("Whole(+Inf) ok; want not whole")
	}
}
