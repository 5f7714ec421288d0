package lint

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

var snakeCase = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

// genericNames are names that say nothing about the capability.
var genericNames = []string{"do_action", "do_update", "do_create", "do_delete",
	"read_data", "read_value", "read_info", "do_execute", "do_run"}

// named applies check to named tools other than can_do (N001 covers the
// unnamed, and can_do is exempt from the naming rules).
func named(check func(name string) []string) func(*Tool) []string {
	return func(t *Tool) []string {
		if t.Name == "" || t.Name == "can_do" {
			return nil
		}
		return check(t.Name)
	}
}

func when(cond bool, msg string) []string {
	if cond {
		return []string{msg}
	}
	return nil
}

// namingRules: N001–N007, the reference linter's names.
var namingRules = []toolRule{
	{Rule{"N001", Error, "a tool has a name", false}, func(t *Tool) []string {
		return when(t.Name == "", "Tool has no 'name' field.")
	}},
	{Rule{"N002", Error, "names are lowercase_snake_case", false}, named(func(n string) []string {
		return when(!snakeCase.MatchString(n), fmt.Sprintf("Name must be lowercase_snake_case. Got: '%s'.", n))
	})},
	{Rule{"N003", Error, "names start with read_, do_ or start_ (proMCP v0.3), or are exactly can_do", false}, named(func(n string) []string {
		return when(!strings.HasPrefix(n, "read_") && !strings.HasPrefix(n, "do_") && !strings.HasPrefix(n, "start_"),
			"Name must start with 'read_', 'do_' or 'start_' (proMCP v0.3), or be exactly 'can_do'.")
	})},
	{Rule{"N004", Error, "read_ is followed by a capability", false}, named(func(n string) []string {
		return when(n == "read_", "read_* tool name must have a capability identifier after the prefix.")
	})},
	{Rule{"N005", Error, "do_ is followed by a capability", false}, named(func(n string) []string {
		return when(n == "do_", "do_* tool name must have a capability identifier after the prefix.")
	})},
	{Rule{"N008", Error, "start_ is followed by a capability", false}, named(func(n string) []string {
		return when(n == "start_", "start_* tool name must have a capability identifier after the prefix.")
	})},
	{Rule{"N006", Warning, "names are at most 64 characters", false}, named(func(n string) []string {
		return when(len(n) > 64, fmt.Sprintf("Tool name exceeds 64 characters (%d). Consider shortening.", len(n)))
	})},
	{Rule{"N007", Warning, "names are not generic (do_action, read_data...)", false}, named(func(n string) []string {
		return when(slices.Contains(genericNames, n), fmt.Sprintf("'%s' is a generic name. Use a domain-specific capability name.", n))
	})},
}

// isDo reports whether name is a mutation: a do_*, or proMCP v0.3's
// start_* (a long-running do_*, whose status its read_status_* reads).
func isDo(name string) bool {
	return strings.HasPrefix(name, "do_") || strings.HasPrefix(name, "start_")
}
