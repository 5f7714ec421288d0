package lint

// inputRules: I001–I003, the reference linter's inputs.
var inputRules = []toolRule{
	{Rule{"I001", Error, "can_do takes an intent", false}, func(t *Tool) []string {
		if t.Name != "can_do" {
			return nil
		}
		_, ok := props(object(t.InputSchema))["intent"]
		return when(!ok, "can_do inputSchema must include 'intent' property.")
	}},
	{Rule{"I002", Error, "can_do's intent has semantic_tags", false}, func(t *Tool) []string {
		if t.Name != "can_do" {
			return nil
		}
		intent, ok := props(object(t.InputSchema))["intent"].(map[string]any)
		if !ok {
			return nil
		}
		ip := props(intent)
		// An intent typed as a bare object is accepted, as the reference
		// does (its fields are checked at run time).
		if intent["type"] == "object" && len(ip) == 0 {
			return nil
		}
		_, ok = ip["semantic_tags"]
		return when(!ok, "can_do intent must include 'semantic_tags' array.")
	}},
	{Rule{"I003", Error, "do_* takes an idempotency_key", false}, func(t *Tool) []string {
		if !isDo(t.Name) {
			return nil
		}
		_, ok := props(object(t.InputSchema))["idempotency_key"]
		return when(!ok, "do_* inputSchema must include 'idempotency_key' parameter.")
	}},
}
