// Package kitsokiformat holds the conformance stories of Kitsoki's story
// format: one small story per feature under testdata/, each with the flows
// that show it behaves as Kitsoki's does. The tests run them through the
// flow runner; docs/kitsoki.md cites them key by key, and
// TestKitsokiConformanceTable checks that table against Kitsoki's key list.
package kitsokiformat
