package trace

// peek returns the seq the next event of turn would get (0 for a turn the
// trace has not reached yet, and for a lower turn, which Append refuses).
func (s *sequencer) peek(turn int64) int {
	if !s.started || turn != s.turn {
		return 0
	}
	return s.nextSeq
}

// NextSeq returns the seq the next Append for turn will assign. The host
// derives a live call_id from it before writing agent.call.start, which must
// carry that id (trace-format.md §7).
func (w *Writer) NextSeq(turn int64) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.enc.seq.peek(turn)
}

// NextSeq returns the seq the next Append for turn will assign.
func (m *MemSink) NextSeq(turn int64) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.enc.seq.peek(turn)
}
