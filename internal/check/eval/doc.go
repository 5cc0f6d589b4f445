// Package eval measures how well candidate models answer one bounded
// host.agent.* call site, and records the evidence behind a model pin.
//
// A dataset (kind: agent_eval, eval-format.md §2) names a call site by its
// invoke id and lists examples: prompt args and the answer expected. Check
// validates a dataset offline against the story it points at, resolving the
// call site and its four hashes (§3); Compare scores an answer with one of
// the comparators of §4. A live run (Runner) sends every example, repeat
// times, to every candidate of the dataset's matrix through the host's real
// dispatch path (prompt rendering, persona, schema validation, trace
// events), computes per-candidate statistics, picks a candidate by the
// dataset's selection strategy, and writes a report (§5). Status compares
// the latest report with the call site as it is now. The reports are the
// evidence selection: pins cite; routes.Resolve turns those pins into host
// routes, honouring a pin only while its evidence is present, fresh and
// passing.
package eval
