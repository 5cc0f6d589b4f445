package trace

// Observer sees every event a run's sink wrote, after the write: ev has
// its seq and ts, p is the typed payload (nil for an open payload, which
// is then ev.Payload). The values are the writer's, before masking: an
// observer that sends them anywhere masks them itself. Observers must not
// modify either, and must be safe for concurrent use (the host appends from
// its call goroutines). The OpenTelemetry exporter is one.
type Observer interface {
	Observe(ev *Event, p Payload)
}

// ObserverFunc adapts a function to an Observer.
type ObserverFunc func(ev *Event, p Payload)

// Observe calls f(ev, p).
func (f ObserverFunc) Observe(ev *Event, p Payload) { f(ev, p) }
