package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/kitsoki/kitsoki/internal/agents/toolserver"
	"github.com/kitsoki/kitsoki/internal/load/story"
	"github.com/kitsoki/kitsoki/internal/run/plugintools"
	"github.com/kitsoki/kitsoki/internal/serve/mcpserve"
)

// pluginRuntime is what a run owns for plugin-contributed agent tools: the
// service that keeps the plugins' lifecycle and the catalog, and, with
// --control-mcp, the configuration-surface MCP session that can enable
// and disable them.
type pluginRuntime struct {
	svc  *plugintools.Service
	path string // the story file, re-read by :reload
	ws   string // its workspace, the same on reload
	ctl  *toolserver.HTTPServer
	// profiles adds the run's profile agents to a reloaded story, so
	// :reload keeps them.
	profiles func(*story.Story)
}

// startPlugins wraps the plugin-tool service of a run (runtime.Open with
// Tools.Plugins started it). With controlAddr it also serves the
// configuration surface, whose plugin controls act on this run, and prints
// its URL and token on stderr.
func startPlugins(st *story.Story, svc *plugintools.Service, controlAddr string, logger *slog.Logger, stderr io.Writer) (*pluginRuntime, error) {
	pr := &pluginRuntime{svc: svc, path: st.File, ws: st.Workspace.Dir()}
	if controlAddr == "" {
		return pr, nil
	}
	p, _ := toolserver.ParseMode(string(toolserver.Configuration))
	h, err := toolserver.ListenHTTP(controlAddr, logger)
	if err != nil {
		return nil, fmt.Errorf("--control-mcp: %w", err)
	}
	s, err := mcpserve.Open(h, mcpserve.Config{
		Profile:   p,
		Root:      st.Dir,
		Workspace: st.Workspace.Dir(),
		LoadStory: loadStoryIn,
		Plugins:   svc,
		Secrets:   st.Secrets,
		Logger:    logger,
	})
	if err != nil {
		h.Close()
		return nil, fmt.Errorf("--control-mcp: %w", err)
	}
	pr.ctl = h
	fmt.Fprintf(stderr, "kitsoki: plugin controls (MCP, configuration surface) at %s\nkitsoki: send the header \"Authorization: Bearer %s\"\n", s.URL(), s.Token())
	return pr, nil
}

// Close stops the control server (the runtime closes the service, and the
// registry the plugins themselves).
func (p *pluginRuntime) Close() error {
	if p == nil || p.ctl == nil {
		return nil
	}
	return p.ctl.Close()
}

// pluginCommandNames are the prompt's plugin commands.
var pluginCommandNames = []string{":plugins", ":enable", ":disable", ":reload"}

// Names, Help and Run make the plugin commands a driver.Commands.
func (p *pluginRuntime) Names() []string { return pluginCommandNames }
func (p *pluginRuntime) Help() string    { return pluginHelp }

// Run runs a plugin command. At the prompt `:reload` is the story's
// reload (driver.Console.Reload): it reaches Run only when the run cannot
// reload its story; `:reload plugins` reloads the plugins in place.
func (p *pluginRuntime) Run(ctx context.Context, line string, out, errw io.Writer) bool {
	switch strings.Join(strings.Fields(line), " ") {
	case ":reload":
		fmt.Fprintln(errw, "kitsoki: this run cannot reload its story")
		return true
	case ":reload plugins":
		line = ":reload"
	}
	return p.command(ctx, line, out, errw)
}

// pluginHelp documents the prompt's plugin commands.
const pluginHelp = `:plugins   agent plugins with tools      :enable <alias> / :disable <alias>
:reload    re-read the story and go on in it · :reload plugins   re-read only the plugins`

// command runs one of the prompt's plugin commands and reports whether
// line was one.
func (p *pluginRuntime) command(ctx context.Context, line string, out, errw io.Writer) bool {
	fields := strings.Fields(line)
	if len(fields) == 0 {
		return false
	}
	switch fields[0] {
	case ":plugins":
		p.printStatus(out)
	case ":enable", ":disable":
		if len(fields) != 2 {
			fmt.Fprintf(errw, "kitsoki: write %s <alias>, e.g. %s agent.tagger\n", fields[0], fields[0])
			return true
		}
		if p == nil {
			fmt.Fprintln(errw, "kitsoki: no plugin contributes agent tools in this run")
			return true
		}
		st, err := p.svc.SetPluginEnabled(ctx, fields[1], fields[0] == ":enable")
		if err != nil {
			fmt.Fprintln(errw, "kitsoki:", err)
			return true
		}
		fmt.Fprintf(out, "%s is %s\n", st.Alias, st.State)
	case ":reload":
		p.reload(out, errw)
	default:
		return false
	}
	return true
}

func (p *pluginRuntime) printStatus(out io.Writer) {
	var status []mcpserve.PluginStatus
	if p != nil {
		status = p.svc.PluginStatus()
	}
	if len(status) == 0 {
		fmt.Fprintln(out, "no plugin contributes agent tools in this run")
		return
	}
	for _, st := range status {
		line := fmt.Sprintf("  %-20s %-9s %s", st.Alias, st.State, strings.Join(st.Tools, ", "))
		if st.Detail != "" {
			line += "\n      " + st.Detail
		}
		fmt.Fprintln(out, line)
	}
}

// reload re-reads the story file and applies its plugin declarations. A
// story that no longer loads, or whose tool declarations are invalid,
// changes nothing. The states of the running story are not replaced.
func (p *pluginRuntime) reload(out, errw io.Writer) {
	if p == nil {
		fmt.Fprintln(errw, "kitsoki: no plugin contributes agent tools in this run")
		return
	}
	st, err := story.Load(p.path, story.WithWorkspace(p.ws))
	if err != nil {
		fmt.Fprintf(errw, "kitsoki: reload failed; the previous plugins and tools stay in force:\n%v\n", err)
		return
	}
	defer st.Close()
	if p.profiles != nil {
		p.profiles(st)
	}
	if err := p.svc.Reload(st.Plugins); err != nil {
		fmt.Fprintf(errw, "kitsoki: %v\n", err)
		return
	}
	fmt.Fprintf(out, "reloaded the plugins of %s\n", p.path)
	p.printStatus(out)
}
