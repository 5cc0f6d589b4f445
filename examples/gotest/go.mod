module example.com/gotest

go 1.26.0

require github.com/kitsoki/kitsoki v0.0.0-00010101000000-000000000000

require (
	github.com/bmatcuk/doublestar/v4 v4.10.4 // indirect
	github.com/expr-lang/expr v1.17.8 // indirect
	github.com/flosch/pongo2/v6 v6.0.0 // indirect
	github.com/google/go-cmp v0.7.0 // indirect
	github.com/google/jsonschema-go v0.4.2 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/klauspost/compress v1.20.4 // indirect
	github.com/kljensen/snowball v0.10.0 // indirect
	github.com/mark3labs/mcp-go v1.2.1 // indirect
	github.com/santhosh-tekuri/jsonschema/v6 v6.0.3 // indirect
	github.com/sourcegraph/jsonrpc2 v0.2.3 // indirect
	github.com/spf13/cast v1.7.1 // indirect
	github.com/yosida95/uritemplate/v3 v3.0.2 // indirect
	go.starlark.net v0.0.0-20260908191801-89a6a09411d5 // indirect
	go.yaml.in/yaml/v3 v3.0.6 // indirect
	golang.org/x/sys v0.50.0 // indirect
	golang.org/x/term v0.48.0 // indirect
	golang.org/x/text v0.44.0 // indirect
)

replace github.com/kitsoki/kitsoki => ../..
