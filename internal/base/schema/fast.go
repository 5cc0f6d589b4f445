package schema

import (
	"math"
	"math/big"
	"strconv"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// fastSchema is a validator of kitsoki's own for the keywords submissions'
// schemas mostly use, compiled from the library's compiled schema. It only
// ever answers "valid": Validate takes that answer and stops, and in every
// other case (the value is invalid, or holds a Go type or a number the fast
// path does not judge) runs the library's validator as before, so every
// error message is the library's. A valid value is judged without
// allocating.
//
// A schema is compiled only when every keyword it (and each subschema) uses
// is one implemented here; any other keyword (a $ref, a combinator, a
// pattern, a format the library asserts, ...) leaves the whole schema to
// the library (fastCompile returns nil).
type fastSchema struct {
	bool  int8 // boolean schema: 1 true, -1 false, 0 not a boolean schema
	types jsonTypes

	enum     []fastConst // nil: no enum
	hasEnum  bool
	konst    fastConst
	hasConst bool

	// object
	minProps, maxProps int // -1: none
	required           []string
	props              map[string]*fastSchema
	addlFalse          bool        // additionalProperties: false
	addl               *fastSchema // additionalProperties: a schema

	// array
	minItems, maxItems int // -1: none
	items              *fastSchema

	// string
	minLen, maxLen int // -1: none

	// number
	min, max, exMin, exMax *numBound // nil: none
}

// jsonTypes is a set of JSON types; 0 means the schema sets no type.
type jsonTypes uint8

const (
	tNull jsonTypes = 1 << iota
	tBool
	tNumber
	tInteger
	tString
	tArray
	tObject
)

// fastConst is an enum or const value the fast path compares: null, a
// boolean, a string or a number (objects and arrays leave the schema to
// the library).
type fastConst struct {
	t   jsonTypes // tNull, tBool, tString or tNumber
	b   bool
	s   string
	num *numBound
}

// fastCompileDepth bounds the nesting compiled; deeper schemas are the
// library's (a schema without $ref has no cycles, but may be deep).
const fastCompileDepth = 64

// fastCompile returns the fast validator of s, or nil when s uses a
// keyword the fast path does not implement.
func fastCompile(s *jsonschema.Schema) *fastSchema {
	return fastCompileAt(s, 0)
}

func fastCompileAt(s *jsonschema.Schema, depth int) *fastSchema {
	if s == nil || depth > fastCompileDepth {
		return nil
	}
	f := &fastSchema{minProps: -1, maxProps: -1, minItems: -1, maxItems: -1, minLen: -1, maxLen: -1}
	if s.Bool != nil {
		f.bool = -1
		if *s.Bool {
			f.bool = 1
		}
		return f
	}
	if s.Ref != nil || s.RecursiveRef != nil || s.DynamicRef != nil ||
		s.Not != nil || len(s.AllOf) > 0 || len(s.AnyOf) > 0 || len(s.OneOf) > 0 ||
		s.If != nil || s.Then != nil || s.Else != nil || s.Format != nil ||
		s.PropertyNames != nil || len(s.PatternProperties) > 0 || len(s.Dependencies) > 0 ||
		len(s.DependentRequired) > 0 || len(s.DependentSchemas) > 0 || s.UnevaluatedProperties != nil ||
		s.UniqueItems || s.Contains != nil || s.MinContains != nil || s.MaxContains != nil ||
		s.AdditionalItems != nil || len(s.PrefixItems) > 0 || s.UnevaluatedItems != nil ||
		s.Pattern != nil || s.ContentEncoding != nil || s.ContentMediaType != nil || s.ContentSchema != nil ||
		s.MultipleOf != nil || len(s.Extensions) > 0 {
		return nil
	}
	if s.Types != nil {
		for _, t := range s.Types.ToStrings() {
			switch t {
			case "null":
				f.types |= tNull
			case "boolean":
				f.types |= tBool
			case "number":
				f.types |= tNumber
			case "integer":
				f.types |= tInteger
			case "string":
				f.types |= tString
			case "array":
				f.types |= tArray
			case "object":
				f.types |= tObject
			default:
				return nil
			}
		}
	}
	if s.Enum != nil {
		f.hasEnum = true
		f.enum = make([]fastConst, 0, len(s.Enum.Values))
		for _, v := range s.Enum.Values {
			c, ok := fastConstOf(v)
			if !ok {
				return nil
			}
			f.enum = append(f.enum, c)
		}
	}
	if s.Const != nil {
		c, ok := fastConstOf(*s.Const)
		if !ok {
			return nil
		}
		f.konst, f.hasConst = c, true
	}
	intOr := func(p *int) int {
		if p == nil {
			return -1
		}
		return *p
	}
	f.minProps, f.maxProps = intOr(s.MinProperties), intOr(s.MaxProperties)
	f.minItems, f.maxItems = intOr(s.MinItems), intOr(s.MaxItems)
	f.minLen, f.maxLen = intOr(s.MinLength), intOr(s.MaxLength)
	f.required = s.Required
	if len(s.Properties) > 0 {
		f.props = make(map[string]*fastSchema, len(s.Properties))
		for k, ps := range s.Properties {
			pf := fastCompileAt(ps, depth+1)
			if pf == nil {
				return nil
			}
			f.props[k] = pf
		}
	}
	switch a := s.AdditionalProperties.(type) {
	case nil:
	case bool:
		f.addlFalse = !a
	case *jsonschema.Schema:
		if f.addl = fastCompileAt(a, depth+1); f.addl == nil {
			return nil
		}
	default:
		return nil
	}
	switch it := s.Items.(type) {
	case nil:
	case *jsonschema.Schema:
		if f.items = fastCompileAt(it, depth+1); f.items == nil {
			return nil
		}
	default: // draft-07 tuple items
		return nil
	}
	if s.Items2020 != nil {
		if f.items != nil {
			return nil
		}
		if f.items = fastCompileAt(s.Items2020, depth+1); f.items == nil {
			return nil
		}
	}
	for _, b := range []struct {
		r  *big.Rat
		to **numBound
	}{{s.Minimum, &f.min}, {s.Maximum, &f.max}, {s.ExclusiveMinimum, &f.exMin}, {s.ExclusiveMaximum, &f.exMax}} {
		if b.r != nil {
			*b.to = newNumBound(b.r)
		}
	}
	return f
}

// numBound is a number of the schema (a bound, an enum or const value)
// prepared so that comparing a decoded number with it allocates nothing
// and gives what the library's comparison gives. The library compares
// exact rationals: an int64 as its decimal text, a float64 as its
// shortest text (fmt's %v), with the schema's number as written.
type numBound struct {
	// f is the float64 nearest the number, and atF the sign of (the
	// shortest text of f) - (the number): what the library finds for a
	// float64 value equal to f. For any other float64 v the sign of
	// v - f is the answer: v's shortest text rounds to v and the number
	// rounds to f, so they lie on the same sides as v and f.
	f   float64
	atF int
	// floor is the number's floor when it fits an int64 (range 0), else
	// range is -1 (the number is below every int64) or 1 (above);
	// integral says the number is its floor. An int64 is compared
	// exactly through them.
	floor    int64
	rng      int
	integral bool
}

func newNumBound(r *big.Rat) *numBound {
	n := &numBound{}
	n.f, _ = r.Float64()
	if !math.IsInf(n.f, 0) {
		short, _ := new(big.Rat).SetString(strconv.FormatFloat(n.f, 'g', -1, 64))
		n.atF = short.Cmp(r)
	}
	fl := new(big.Int).Quo(r.Num(), r.Denom()) // truncated toward zero
	if r.Sign() < 0 && !r.IsInt() {
		fl.Sub(fl, big.NewInt(1))
	}
	n.integral = r.IsInt()
	switch {
	case !fl.IsInt64() && fl.Sign() < 0:
		n.rng = -1
	case !fl.IsInt64():
		n.rng = 1
	default:
		n.floor = fl.Int64()
	}
	return n
}

// cmp returns the sign of v - n as the library finds it.
func (n *numBound) cmp(v numVal) int {
	if v.isInt {
		switch {
		case n.rng < 0:
			return 1
		case n.rng > 0:
			return -1
		case v.i > n.floor:
			return 1 // v >= floor+1 > n
		case v.i < n.floor:
			return -1
		case n.integral:
			return 0
		default:
			return -1 // v = floor < n
		}
	}
	switch {
	case v.f < n.f:
		return -1
	case v.f > n.f:
		return 1
	}
	return n.atF
}

// numVal is a decoded number: an int64 or a float64.
type numVal struct {
	isInt bool
	i     int64
	f     float64
}

// fastConstOf turns an enum or const value of the schema document into a
// fastConst, when it is one the fast path compares.
func fastConstOf(v any) (fastConst, bool) {
	switch x := v.(type) {
	case nil:
		return fastConst{t: tNull}, true
	case bool:
		return fastConst{t: tBool, b: x}, true
	case string:
		return fastConst{t: tString, s: x}, true
	}
	r, ok := new(big.Rat).SetString(numberText(v))
	if !ok {
		return fastConst{}, false
	}
	return fastConst{t: tNumber, num: newNumBound(r)}, true
}

// numberText is the text of a number of the schema document (a
// json.Number, or a Go number), "" for anything else.
func numberText(v any) string {
	switch x := v.(type) {
	case interface{ String() string }: // json.Number
		return x.String()
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	case int64:
		return strconv.FormatInt(x, 10)
	case int:
		return strconv.Itoa(x)
	}
	return ""
}

// valid reports whether v certainly satisfies the schema. False means
// invalid or not judged here: the caller then asks the library.
func (f *fastSchema) valid(v any) bool {
	switch f.bool {
	case 1:
		return true
	case -1:
		return false
	}
	switch x := v.(type) {
	case nil:
		return f.typeOK(tNull) && f.constOK(fastConst{t: tNull})
	case bool:
		return f.typeOK(tBool) && f.constOK(fastConst{t: tBool, b: x})
	case string:
		if !f.typeOK(tString) || !f.constOK(fastConst{t: tString, s: x}) {
			return false
		}
		if f.minLen >= 0 || f.maxLen >= 0 {
			n := utf8.RuneCountInString(x)
			if f.minLen >= 0 && n < f.minLen || f.maxLen >= 0 && n > f.maxLen {
				return false
			}
		}
		return true
	case int64:
		return f.number(numVal{isInt: true, i: x}, true)
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return false
		}
		return f.number(numVal{f: x}, x == math.Trunc(x))
	case []any:
		if !f.typeOK(tArray) || f.hasConst || f.hasEnum {
			return false
		}
		if f.minItems >= 0 && len(x) < f.minItems || f.maxItems >= 0 && len(x) > f.maxItems {
			return false
		}
		if f.items != nil {
			for _, e := range x {
				if !f.items.valid(e) {
					return false
				}
			}
		}
		return true
	case map[string]any:
		if !f.typeOK(tObject) || f.hasConst || f.hasEnum {
			return false
		}
		if f.minProps >= 0 && len(x) < f.minProps || f.maxProps >= 0 && len(x) > f.maxProps {
			return false
		}
		for _, k := range f.required {
			if _, ok := x[k]; !ok {
				return false
			}
		}
		for k, e := range x {
			if ps, ok := f.props[k]; ok {
				if !ps.valid(e) {
					return false
				}
				continue
			}
			if f.addlFalse {
				return false
			}
			if f.addl != nil && !f.addl.valid(e) {
				return false
			}
		}
		return true
	}
	return false // a Go type the fast path does not judge
}

// typeOK reports whether the schema's type admits a value of type t
// (tInteger for integral numbers is checked by number).
func (f *fastSchema) typeOK(t jsonTypes) bool {
	return f.types == 0 || f.types&t != 0
}

// constOK checks const and enum for null, a boolean or a string.
func (f *fastSchema) constOK(c fastConst) bool {
	if f.hasConst && !c.equal(f.konst) {
		return false
	}
	if f.hasEnum {
		for _, e := range f.enum {
			if c.equal(e) {
				return true
			}
		}
		return false
	}
	return true
}

// equal compares two scalars of the same kind; numbers are compared by
// number.
func (c fastConst) equal(o fastConst) bool {
	if c.t != o.t {
		return false
	}
	switch c.t {
	case tBool:
		return c.b == o.b
	case tString:
		return c.s == o.s
	}
	return true // null
}

// number checks a number (integral when it has no fractional part).
func (f *fastSchema) number(n numVal, integral bool) bool {
	if f.types != 0 && f.types&tNumber == 0 && !(integral && f.types&tInteger != 0) {
		return false
	}
	if f.hasConst && (f.konst.t != tNumber || f.konst.num.cmp(n) != 0) {
		return false
	}
	if f.hasEnum {
		found := false
		for _, e := range f.enum {
			if e.t == tNumber && e.num.cmp(n) == 0 {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return !(f.min != nil && f.min.cmp(n) < 0 || f.max != nil && f.max.cmp(n) > 0 ||
		f.exMin != nil && f.exMin.cmp(n) <= 0 || f.exMax != nil && f.exMax.cmp(n) >= 0)
}
