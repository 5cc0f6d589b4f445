# kitsoki — make targets. `make demo` runs the bundled story offline;
# `make test` is what CI runs.
GO ?= go
BIN := bin/kitsoki

.PHONY: all build demo test vet race bench tidy clean

all: build

build:
	$(GO) build -o $(BIN) ./cmd/kitsoki

# Runs the bundled example story end to end with its scripted demo agent:
# no model, no network.
demo: build
	$(BIN) run stories/hello/app.yaml --trace .kitsoki/runs/demo.jsonl \
		--intents 'greet name=Ada style=formal,bye'

vet:
	$(GO) vet ./...

test: vet
	$(GO) test -race -count=1 ./...

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

clean:
	rm -rf bin .kitsoki
