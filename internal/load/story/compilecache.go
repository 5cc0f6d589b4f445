package story

import (
	"sync"

	"github.com/kitsoki/kitsoki/internal/base/expr"
	"github.com/kitsoki/kitsoki/internal/load/compose"
)

// compileCache compiles each distinct template or expression of a load
// once: a story repeats its texts (menu labels, "look", the same view in
// every room extending one base, an imported story's text in each of its
// rooms), and the compiled values are immutable, so every use shares one.
// The key is the language, the source and the chain it is compiled with
// (nil when the source cannot refer to anything a chain renames). Compile
// jobs run on several workers; the first to ask compiles, the others wait
// for it. Each use still reports its own error, at its own place.
type compileCache struct {
	mu sync.Mutex
	m  map[cacheKey]*cached
}

type cacheKey struct {
	lang  lang
	src   string
	chain *compose.Chain
}

type lang uint8

const (
	langGuard lang = iota
	langValidator
	langValue
	langText
)

type cached struct {
	once sync.Once
	v    any
	err  error
}

// get returns the compiled value of src in lang with chain, compiling it
// on first use.
func (c *compileCache) get(l lang, src string, chain *compose.Chain) (any, error) {
	if !expr.Renamable(src) {
		chain = nil // the chain cannot change it
	}
	k := cacheKey{lang: l, src: src, chain: chain}
	c.mu.Lock()
	if c.m == nil {
		c.m = map[cacheKey]*cached{}
	}
	e := c.m[k]
	if e == nil {
		e = &cached{}
		c.m[k] = e
	}
	c.mu.Unlock()
	e.once.Do(func() {
		opt := withNames(chain)
		switch l {
		case langGuard:
			e.v, e.err = expr.CompileGuard(src, opt)
		case langValidator:
			e.v, e.err = expr.CompileValidator(src, opt)
		case langValue:
			e.v, e.err = expr.CompileValue(src, opt)
		case langText:
			e.v, e.err = expr.CompileText(src, opt)
		}
	})
	return e.v, e.err
}

func (c *compileCache) guard(src string, chain *compose.Chain) (*expr.Guard, error) {
	v, err := c.get(langGuard, src, chain)
	if err != nil {
		return nil, err
	}
	return v.(*expr.Guard), nil
}

func (c *compileCache) validator(src string, chain *compose.Chain) (*expr.Guard, error) {
	v, err := c.get(langValidator, src, chain)
	if err != nil {
		return nil, err
	}
	return v.(*expr.Guard), nil
}

func (c *compileCache) value(src string, chain *compose.Chain) (*expr.Value, error) {
	v, err := c.get(langValue, src, chain)
	if err != nil {
		return nil, err
	}
	return v.(*expr.Value), nil
}

func (c *compileCache) text(src string, chain *compose.Chain) (*expr.Text, error) {
	v, err := c.get(langText, src, chain)
	if err != nil {
		return nil, err
	}
	return v.(*expr.Text), nil
}
