// Package story loads and validates app.yaml stories: YAML types, includes,
// every load-time check, and source positions for error messages. It compiles
// guards, templates, prompt files and schemas once, at load, so running a
// story never compiles anything.
package story

import (
	"github.com/kitsoki/kitsoki/internal/agents/agent"
	"github.com/kitsoki/kitsoki/internal/base/expr"
	"github.com/kitsoki/kitsoki/internal/base/schema"
	"github.com/kitsoki/kitsoki/internal/base/workspace"
)

// Pos is a source position: file (relative to the story directory), line and
// column (1-based).
type Pos struct {
	File string
	Line int
	Col  int
}

// Story is a loaded, validated story.
type Story struct {
	Dir  string // absolute story directory (the root file's directory)
	File string // absolute path of the root file
	// ContentHash is "sha256:" and the hex SHA-256 of the story's YAML
	// files (the root file and its includes, in load order, each as its
	// slash path relative to Dir, its length and its bytes): what a
	// resumed session compares to decide whether to replay-check.
	ContentHash string
	// Workspace is the directory every file the story reads stays inside:
	// load-time files, and prompt files and schemas named at run time.
	Workspace workspace.Root

	App     App
	Hosts   []string // union of all files' hosts:, in first-seen order
	Agents  map[string]*Persona
	Plugins map[string]agent.Declaration // includes the injected agent.claude
	// DefaultPluginInjected is true when no file declared agent.claude and
	// the loader added it to Plugins.
	DefaultPluginInjected bool
	// HostPlugins are the host_plugins: entries by handler name (nil
	// when there are none).
	HostPlugins map[string]*HostPlugin
	// Interfaces are the host_interfaces: entries by name (nil when there
	// are none); see interfaces.go.
	Interfaces map[string]*Interface
	// Providers are the providers: entries (name → model and env for the
	// built-in claude component), picked by with.provider on an invoke.
	Providers map[string]agent.Provider
	World     []*WorldVar // declaration order
	Intents   map[string]*Intent
	Root      string
	Exits     map[string]*Exit
	States    map[string]*State
	// Routing is the routing: block (zero when absent).
	Routing Routing
	// OffPath is the off_path: overlay (nil when absent); MetaModes the
	// meta_modes: ones by name (nil when none).
	OffPath   *Overlay
	MetaModes map[string]*Overlay

	// Decider is the decider: block (nil when absent): the judge the
	// session asks at a decision gate that owes an autonomous decision.
	Decider *Decider
	// Proposals are the proposals: kinds by name (nil when none): checked
	// declarations, not run (proposals.go).
	Proposals map[string]*Proposal

	// Schemas holds every schema referenced by a literal with.schema path,
	// compiled, keyed by the path as written (relative to Dir).
	Schemas map[string]*schema.Schema
	// Prompts holds every prompt file referenced by a literal with.prompt or
	// with.prompt_path, compiled, keyed by the path as written.
	Prompts map[string]*expr.Text
	// SchemaCompiler compiles schemas named by templated paths at run time,
	// rooted in Dir like the load-time ones.
	SchemaCompiler *schema.Compiler
	// PromptOverlay is the prompt overlay directory (prompts.overlay: or
	// WithPromptOverlay), absolute; "" for none. A prompt path rendered at
	// run time resolves in it first, as literal ones do at load.
	PromptOverlay string
	// promptAssembler resolves the include, extends and import tags of a
	// prompt file read at run time, along the prompt search path.
	promptAssembler *loader
	// importCompilers compile the schemas of imported stories, each rooted
	// in its own story directory.
	importCompilers map[string]*schema.Compiler

	// Secrets are the values substituted from ${VAR} in agent_plugins,
	// host_plugins, providers and host.run's with.env; the trace writer
	// redacts them.
	Secrets []string
	// UsesMenu is set when a view, view element when:, say: or other text
	// template reads the computed menu (menu, available(), …): the session
	// then builds it for every view it renders.
	UsesMenu bool
	// Warnings are non-fatal findings (e.g. [later] keys that are ignored).
	Warnings []Diagnostic
}

// App is the app: block.
type App struct {
	ID      string
	Version string
	Title   string
	Author  string
	License string
	// Context (app.context:) is the story's domain text, put before every
	// agent's system prompt and the router's prompt.
	Context string
}

// Persona is an agents: entry, picked by with.agent on a host.agent.* invoke.
// The agent package owns the type because transports read it.
type Persona = agent.Persona

// WorldVar is one declared world key.
type WorldVar struct {
	Name        string
	Type        string
	Description string
	Default     any
	HasDefault  bool
	Values      []any
}

// Intent is an intents: entry (global or state-local).
type Intent struct {
	Name        string
	Title       string
	Description string
	Examples    []string
	Priority    int
	Hidden      bool
	Synonyms    []Synonym
	Slots       map[string]*Slot
	SlotOrder   []string
}

// Slot is one slot of an intent.
type Slot struct {
	Name        string
	Type        string
	Required    bool
	Default     any
	HasDefault  bool
	Values      []any
	Description string
	Examples    []string
	Prompt      string
	FormatHint  string
	// Format (format:) names the semantic format a string value must
	// have (one of schema.SlotFormats, e.g. email, date, jql); "" for none.
	Format   string
	Synonyms []SlotSynonym // an enum slot's synonyms:, value by value
	// Validator (validator:) must be true, with value bound to the slot's
	// value, for the slot to be accepted; nil when absent.
	Validator    *expr.Guard
	ValidatorPos Pos
}

// Exit is an exits: entry, the target of "@exit:<name>".
type Exit struct {
	Name        string
	Description string
	Requires    []string
}

// ExitStatePrefix prefixes the terminal state the loader adds for each exit.
const ExitStatePrefix = "__exit__"

// State is one state. Name is its full dotted path.
type State struct {
	Name          string
	Parent        string // enclosing state path, "" at top level
	Description   string
	View          *expr.Text // the string form; nil when absent
	ViewDoc       *ViewDoc   // the typed forms (element list, extends/blocks); nil when absent
	OnEnter       []*Effect
	On            map[string][]*Arm // intent name (or "*") -> arms, in order
	Terminal      bool
	Exit          string // for __exit__<name> states: the exit name
	Intents       map[string]*Intent
	RelevantWorld []string
	// RelevantSlots are slot names (of the intents the state can take)
	// that a surface shows next to the state, like RelevantWorld.
	RelevantSlots []string
	// DefaultIntent is the free-text sink of a conversational state: the
	// intent whose one required string slot (DefaultSlot) gets whatever
	// free text no earlier tier resolved.
	DefaultIntent string
	DefaultSlot   string
	// Fallback is set when DefaultIntent (and its on: arms here) come from
	// the story's free-form fallback: the work-intake state whose arms
	// were copied (routing.free_form_fallback, freeform.go).
	Fallback string
	// Contextual is contextual_routing: (nil when absent); see
	// ContextualRouting.
	Contextual *ContextualRouting
	// WriteMode is write_mode: "" (open), WriteOpen or WriteReadOnly: the
	// agents this room dispatches may not use mutating tools.
	WriteMode string
	// Decider is decider: "" (by the room's shape), DeciderHuman or
	// DeciderLLM; see the orchestrator's execution modes.
	Decider string
	// DecisionGate is set when the room's shape makes it a decision gate:
	// it has a forward intent (to another state, not an exit) that none
	// of its own emit_intent effects fires.
	DecisionGate bool
	// InterceptDrive is "rest" when the room begins a multi-turn sub-flow
	// that a prompt-intercept gate must drive to rest; "" otherwise. The
	// engine's own turns do not read it.
	InterceptDrive string
	// Kind is KindAtomic (the default), KindCompound or KindParallel.
	Kind string
	// Children are the nested states: (full paths, declaration order);
	// for a parallel state, its regions.
	Children []string
	// Initial is the child a compound state enters first (full path).
	// When initial: is a template, InitialValue (a value template, {{ }})
	// or InitialText (a text template with {% %} tags) is set instead and
	// rendered on entry to a child name. InitialPos is where initial: is.
	Initial      string
	InitialValue *expr.Value
	InitialText  *expr.Text
	InitialPos   Pos
	// Menu is menu: the intents the room's menu lists, in that order (nil
	// when absent: every intent, in declaration order). The room still
	// takes the intents it does not list.
	Menu []string
	// Transcript is transcript: "" , TranscriptPersistent or
	// TranscriptTransient (a room only).
	Transcript string
	// Footer is footer: the room's status line under the prompt, a text
	// template (nil when absent).
	Footer *expr.Text
	// Theme is theme: the room's colours in the terminal UI ("" for the
	// default; a room only).
	Theme string
	// OffRamp is the agent_off_ramp: entry (nil when absent or false).
	OffRamp *OffRamp
	// Mode is ModeConversational for an agent room, "" otherwise.
	Mode string
	// Timeout is the timeout: entry (nil when absent).
	Timeout *Timeout
	// Import is set on an import's wrapper state (imports.<alias>): a
	// transition into it enters Import.Entry.
	Import *Import
	Pos    Pos
}

// Import is what an imports: entry folded into the story: the wrapper
// state <alias> (whose on_enter writes world_in) and its entry state.
type Import struct {
	Alias   string
	Source  string // the imported story's root file, relative to the story directory
	Version string // version: as written (metadata, not enforced)
	Entry   string // full path of the state a transition into the wrapper enters
	// Intents maps the imported story's own intent names to their names
	// here (<alias>__<name>), for emit_intent names rendered at run time.
	Intents map[string]string
	// Fallback is the imported story's routing.free_form_fallback in this
	// story's names (nil when it declares none); see freeform.go.
	Fallback *FreeFormFallback
	// World lists the import's private world (its own imports' included),
	// by key: a transition into the import from outside sets it back to
	// its defaults before world_in runs.
	World []*WorldVar
}

// Arm is one transition of an on: list.
type Arm struct {
	// Target is the resolved target state path. Stay is true for ".": the
	// machine stays and on_enter does not run. A target naming the current
	// state re-enters it.
	Target string
	Stay   bool
	// TargetTemplate is set instead of Target when target: contains "{{":
	// a value template the session evaluates when the arm is taken and
	// resolves with ResolveTarget. TargetPos is where the target: value is.
	TargetTemplate *expr.Value
	TargetPos      Pos
	// Index is the arm's place in its on: list (0 for the single-arm
	// shorthand), as in the key path on.<intent>[i].
	Index     int
	When      *expr.Guard // nil when absent
	WhenPos   Pos         // where the when: expression is
	Default   bool
	Effects   []*Effect
	GuardHint string
	// View, when set, is shown at the end of the turn instead of the
	// target's view (the arm's view:); ViewDoc is its typed form (a list
	// of elements, or extends/blocks). At most one is set.
	View    *expr.Text
	ViewDoc *ViewDoc
	// NoHistory is push_history: false: taking the arm does not push the
	// state it leaves onto the session's room history.
	NoHistory bool
	// Emit is the arm's emit: event names (nil when absent), sent to the
	// sibling regions of a parallel state after its effects.
	Emit *expr.Tree
	Pos  Pos
}

// Effect is one effect item. At most one action (Set, Increment, Say,
// Invoke) is set; EmitIntent may ride on any item or stand alone.
type Effect struct {
	When      *expr.Guard
	WhenPos   Pos       // where the when: expression is
	Set       []SetItem // sorted by key
	Increment []IncrementItem
	Say       *expr.Text
	Emit      *expr.Tree // emit: event names for the sibling regions of a parallel state
	Invoke    *Invoke
	// EmitIntent is the intent name (possibly a template); nil when absent.
	EmitIntent *expr.Value
	EmitSlots  map[string]*expr.Tree
	// Effects (effects:) run as part of this one: after its action, and
	// before the transition of an on_complete target:.
	Effects []*Effect
	// Target (inside on_complete: only) is the state the session moves to
	// once the chain has run; TargetStay is target: "." (stay). When
	// target: is a template, TargetTemplate is set instead and rendered
	// when the job completes, to a name resolved like an arm's rendered
	// target (Story.ResolveTarget) from the state the job started in.
	Target         string
	TargetStay     bool
	TargetTemplate *expr.Value
	TargetPos      Pos
	Pos            Pos
}

// SetItem is one key of a set: block.
type SetItem struct {
	Key   string
	Value *expr.Tree
}

// IncrementItem is one key of an increment: block.
type IncrementItem struct {
	Key string
	By  int64
}

// Invoke is an invoke: effect.
type Invoke struct {
	Name string // handler, e.g. host.agent.decide (the template source when templated)
	// NameTemplate is a templated name (invoke: "host.{{ world.kind }}"),
	// rendered when the call is queued; nil for a literal name.
	NameTemplate *expr.Value
	With         *expr.Tree // nil when absent; renders to map[string]any
	Bind         []Bind     // sorted by world key
	OnError      string     // resolved target state path, "" when absent
	// OnErrorDeferred marks an on_error naming no state the story declares
	// where it was written (Kitsoki accepts such targets): OnError then
	// holds the name as written, resolved by ResolveTarget from the state
	// the call fails in, and OnErrorPos is where it is written.
	OnErrorDeferred bool
	OnErrorPos      Pos
	Once            bool
	// ExternalSideEffect marks a call whose effect outside kitsoki cannot
	// be undone or safely repeated: a resumed session does not issue it
	// again when it was in flight at the crash (docs/runtime.md).
	ExternalSideEffect bool
	// Retry issues the call again when it fails with one of the kinds it
	// lists (retry:); nil makes the call once.
	Retry      *Retry
	ID         string      // the id: as written (the template source when templated)
	IDTemplate *expr.Value // a templated id:, rendered with with: (queued, then at dispatch); nil for a literal id
	Agent      string      // agent_plugins alias, "" for the built-in path
	Selection  map[string]any
	// Background runs the call as a background job (background: true):
	// the turn goes on, bind: job_id gets the job's id, and OnComplete
	// runs when the job ends.
	Background bool
	OnComplete []*Effect
	Pos        Pos
}

// Bind is one bind: entry. Exactly one of Path and Template is set.
type Bind struct {
	Key      string
	Path     string      // dotted path with [N] into the result data
	Template *expr.Value // a source containing {{
}

// Diagnostic is a load error or warning with its position and key path.
type Diagnostic struct {
	Pos     Pos
	Path    string // key path, e.g. states.merge.on.accept[0].target
	Message string
}
