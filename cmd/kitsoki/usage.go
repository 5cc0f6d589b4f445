package main

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kitsoki/kitsoki/internal/base/nearmiss"
)

// A command line kitsoki cannot run (an unknown command or flag, a flag
// value of the wrong type, the wrong number of arguments, a command group
// without its subcommand) exits exitUsage, so a CI step with a typo fails
// instead of printing help and passing.

// suggestDistance is how many edits away a command or flag name may be for
// "did you mean" (cobra's default).
const suggestDistance = 2

// usageErr is a usage error: text, then where to read the usage.
func usageErr(c *cobra.Command, text string) error {
	//lint:ignore ST1005 the usage hint is the last line the user reads, as cobra writes it.
	return exitWith(exitUsage, fmt.Errorf("%s\nRun '%s --help' for usage.", text, c.CommandPath()))
}

// checkUsage makes every command of the tree refuse what it cannot run:
// a group (a command that only holds subcommands) refuses an unknown
// subcommand with suggestions and refuses to be run without one; argument
// count errors and flag errors become usage errors, an unknown flag with
// the closest flag names. Call it once the tree is complete.
func checkUsage(root *cobra.Command) {
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	root.SetFlagErrorFunc(flagError)
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		switch {
		case c.Name() == "help" && c.HasParent():
			c.Args = nil
			c.Run = nil
			c.RunE = helpTopic
		case c.HasSubCommands() && !c.Runnable():
			c.SuggestionsMinimumDistance = suggestDistance
			c.Args = unknownSubcommand
			c.RunE = missingSubcommand
		case c.Args != nil:
			check := c.Args
			c.Args = func(c *cobra.Command, args []string) error {
				if err := check(c, args); err != nil {
					return usageErr(c, fmt.Sprintf("%s: %v", c.CommandPath(), err))
				}
				return nil
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// unknownSubcommand refuses an argument where a group expects one of its
// subcommands.
func unknownSubcommand(c *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	text := fmt.Sprintf("kitsoki: unknown command %q for %q", args[0], c.CommandPath())
	if s := suggestCommands(c, args); len(s) > 0 {
		text += "\n\nDid you mean this?\n\t" + strings.Join(s, "\n\t")
	} else {
		text += "\n\nAvailable commands: " + strings.Join(available(c), ", ")
	}
	return usageErr(c, text+"\n")
}

// suggestCommands is cobra's suggestions for args[0] (close by Levenshtein
// distance, or a prefix of a name). Without one, a group with a single
// subcommand suggests that one: the whole command line when args[0] looks
// like an argument (a path), since the subcommand was left out.
func suggestCommands(c *cobra.Command, args []string) []string {
	if s := c.SuggestionsFor(args[0]); len(s) > 0 {
		return s
	}
	names := available(c)
	if len(names) != 1 {
		return nil
	}
	if strings.ContainsAny(args[0], "./") {
		return []string{c.CommandPath() + " " + names[0] + " " + strings.Join(args, " ")}
	}
	return names
}

// missingSubcommand refuses a group run without a subcommand.
func missingSubcommand(c *cobra.Command, _ []string) error {
	return usageErr(c, fmt.Sprintf("kitsoki: %q needs a command: %s", c.CommandPath(), strings.Join(available(c), ", ")))
}

// available lists a group's subcommands users can run, sorted.
func available(c *cobra.Command) []string {
	var names []string
	for _, sub := range c.Commands() {
		if sub.IsAvailableCommand() {
			names = append(names, sub.Name())
		}
	}
	sort.Strings(names)
	return names
}

// helpTopic is `kitsoki help [command...]`: the command's help, or a usage
// error for a command that does not exist.
func helpTopic(c *cobra.Command, args []string) error {
	root := c.Root()
	target, rest, err := root.Find(args)
	if err != nil || target == nil {
		target, rest = root, args
	}
	if len(rest) > 0 && target.HasSubCommands() {
		return unknownSubcommand(target, rest)
	}
	return target.Help()
}

// flagError turns a flag parsing error into a usage error; an unknown flag
// gets the closest flag names of the command.
func flagError(c *cobra.Command, err error) error {
	text := fmt.Sprintf("%s: %v", c.CommandPath(), err)
	var ne *pflag.NotExistError
	if errors.As(err, &ne) {
		typed := ne.GetSpecifiedName()
		if group := ne.GetSpecifiedShortnames(); group != "" {
			// -intents: a long name written with one dash parses as
			// shorthands; suggest the long flag it is close to.
			typed = group
		}
		if s := suggestFlags(c, typed); len(s) > 0 {
			text += "\ndid you mean " + strings.Join(s, " or ") + "?"
		}
	}
	return usageErr(c, text)
}

// suggestFlags returns the flags of c (its own and inherited, not hidden)
// nearest to typed: within suggestDistance edits, or named with typed as
// a prefix; the nearest ones only, as "--name".
func suggestFlags(c *cobra.Command, typed string) []string {
	if len(typed) < 2 {
		return nil
	}
	best := suggestDistance + 1
	var out []string
	consider := func(f *pflag.Flag) {
		if f.Hidden {
			return
		}
		d := nearmiss.Distance(strings.ToLower(typed), strings.ToLower(f.Name))
		if strings.HasPrefix(f.Name, typed) && d > suggestDistance {
			d = suggestDistance // a prefix counts as close, after real near-misses
		}
		switch {
		case d > suggestDistance || d > best:
		case d < best:
			best, out = d, []string{"--" + f.Name}
		default:
			out = append(out, "--"+f.Name)
		}
	}
	seen := map[string]bool{}
	for _, fs := range []*pflag.FlagSet{c.LocalFlags(), c.InheritedFlags()} {
		fs.VisitAll(func(f *pflag.Flag) {
			if !seen[f.Name] {
				seen[f.Name] = true
				consider(f)
			}
		})
	}
	sort.Strings(out)
	return out
}
