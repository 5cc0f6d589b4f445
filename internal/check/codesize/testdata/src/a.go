package src

type T struct{ n int }

// Short has three body lines.
func Short() int {
	a := 1
	b := 2
	return a + b
}

func (t *T) Method() {
	t.n++
}

func (t T) Value() int { return t.n }

// Table only returns a composite literal.
func Table() map[string]int {
	return map[string]int{
		"a": 1,
		"b": 2,
	}
}

// PtrTable returns two literals, one by address.
func PtrTable() (*T, []int) {
	return &T{
		n: 1,
	}, []int{1}
}

// NotTable computes before it returns.
func NotTable() []int {
	x := 1
	return []int{x}
}

type G[K comparable, V any] struct{}

func (g *G[K, V]) Generic() {}
