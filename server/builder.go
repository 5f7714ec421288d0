package server

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/promcp/promcp-device/approval"
	"github.com/promcp/promcp-device/clock"
	"github.com/promcp/promcp-device/idempotency"
	"github.com/promcp/promcp-device/promcp"
)

// Caller is who makes a call, as the transport established it.
type Caller struct {
	Name string
	Role string
	// Via is the fleet node a routed call came through (its entry node,
	// bound by NATS), "" for a call made to this gateway directly. The
	// audit records it.
	Via string
	// Credential is the bearer JWT the caller proved itself with over
	// HTTP (set by Authenticate; "" for opaque tokens, certificates and
	// stdio), so that a fleet endpoint can forward it with a routed call
	// for the owning gateway to verify itself. Never log it.
	Credential string
}

type callerKey struct{}

// WithCaller returns ctx carrying c, for transports to set.
func WithCaller(ctx context.Context, c Caller) context.Context {
	return context.WithValue(ctx, callerKey{}, c)
}

// CallerFrom returns the caller in ctx, or the zero Caller.
func CallerFrom(ctx context.Context) Caller {
	c, _ := ctx.Value(callerKey{}).(Caller)
	return c
}

// ReadTool declares a read_* tool.
type ReadTool struct {
	// Name is "read_" + lower_snake_case.
	Name        string
	Title       string
	Description string
	// Unit is the unit of the value, stated in the output schema.
	Unit promcp.Unit
	// Value is the JSON Schema of the value when quality is not error, such
	// as {"type":"number"}; nil allows any value.
	Value map[string]any
	// Source says where the value comes from ("gateway/device"); it is
	// stamped in each result's provenance.
	Source string
	// Args are more optional arguments, by name, as JSON Schemas (a
	// read_status_* tool's job_id); nil: max_age_ms only.
	Args map[string]any
	// Standing is what is the same in every result of the tool: the
	// driver and model that read it and its standing rebuttal, published
	// once (promcp.Standing, at promcp.WarrantURI) and referenced from
	// each result's envelope.
	Standing Standing
}

// Standing declares the standing part of a tool's envelope: the driver
// and device model (the warrant's code) and the lines of the rebuttal
// that hold for every result. A result whose evidence names another
// driver or model says so beside the reference; a result whose rebuttal
// lacks a standing line carries its rebuttal in full.
type Standing struct {
	Driver, Model string
	Rebuttal      []string
}

// DoTool declares a do_* tool.
type DoTool struct {
	// BeginsItself says that the handler decides first and calls
	// DoRequest.Begin once it will actuate, before it touches the device:
	// the server then makes the attempt durable (its in-flight and audit
	// records) only for calls that act, and a refusal costs one audit
	// record. When false the server begins every attempt before the
	// handler runs.
	BeginsItself bool
	// Name is "do_" + lower_snake_case.
	Name        string
	Title       string
	Description string
	// Value is the JSON Schema of the "value" argument, including its
	// bounds (minimum, maximum, enum) for clients to see. The server checks
	// the type itself and leaves the bounds to the handler's policy, so an
	// out-of-range value is refused with permission out_of_range.
	Value map[string]any
	// SideEffects are declared in the description and every response.
	SideEffects []string
	// Compensable says whether the action can be reversed; a do_* tool that
	// is not compensable is annotated destructive.
	Compensable bool
	// Source names the actuator ("gateway/device"), stamped in each
	// result's provenance.
	Source string
	// ApprovalVia says how a human may approve this action where its
	// policy asks for approval: approval.ViaElicitation lets an answer
	// through the caller's MCP client count; anything else (the default)
	// accepts only an out-of-band token from `promcp-device approve`.
	ApprovalVia string
	// OverrideRoles may use an emergency override of this action (a token
	// from `promcp-device override`, passed as approval), which lasts at
	// most OverrideTTL; nil refuses overrides. See manifests.Emergency.
	OverrideRoles []string
	OverrideTTL   time.Duration
	// ValueOptional makes the "value" argument optional (a start_* tool
	// whose job has a default value).
	ValueOptional bool
	// Await, when set, lets the tool run as an MCP task (execution
	// taskSupport optional; see WithTasks): a call made as a task gets its
	// first result, then Await waits for the action to end (reporting
	// progress through progress, which the server sends as throttled
	// progress notifications when the client asked for them) and returns
	// the final result, delivered by tasks/result. A cancelled ctx is
	// tasks/cancel. A call not made as a task answers at once.
	Await func(ctx context.Context, first promcp.DoResult, progress func(done, total float64, message string)) promcp.DoResult
	// Standing is the standing part of the tool's envelope (see
	// ReadTool.Standing).
	Standing Standing
}

// ReadHandler answers a read_* call. A returned error becomes a typed
// read body with quality error and error code internal; a handler that knows
// better returns the ReadResult with quality error itself.
type ReadHandler func(ctx context.Context, req ReadRequest) (promcp.ReadResult, error)

// ReadRequest is a read_* call.
type ReadRequest struct {
	Tool   string
	Args   map[string]any
	Caller Caller
}

// DoHandler performs a do_* call once per idempotency key. It fills Status,
// AppliedValue, PreviousValue and, when refused, Permission and Reason; the
// server fills the key, side effects, compensable and the timestamp where
// left zero. A returned error becomes a failed typed body with code internal
// and, like every result of a handler that ran, is kept for replay: the
// handler may have touched the device, so a retry with the same key returns
// that failure and does not run the handler again (a new attempt needs a
// new key). Only refusals and bad arguments (a failed result with a
// permission other than allowed, or error code invalid_argument) are not
// kept, so that a retry is evaluated afresh.
//
// When req.Recovering is true the handler must not actuate: an earlier
// attempt with this key started and never finished (the server stopped), so
// the action may already have happened. It reads the device and reports what
// it holds: success when the requested value is there, partial with the
// observed AppliedValue when not, failed when the device cannot be read. The
// server marks the result recovered.
//
// The context stays valid while the handler runs even if the client goes
// away: once an attempt has begun it is finished and recorded.
type DoHandler func(ctx context.Context, req DoRequest) (promcp.DoResult, error)

// DoRequest is a do_* call.
type DoRequest struct {
	Tool           string
	Value          any
	IdempotencyKey string
	Args           map[string]any
	Caller         Caller
	// Approved is true when a human approved this exact action, value and
	// key: with a valid approval token, or through MCP elicitation where
	// the tool's ApprovalVia allows it.
	Approved bool
	// Override is true when the call carries a valid emergency override
	// of the action, used by a caller whose role may use one (see
	// DoTool.OverrideRoles); Approved is then true too.
	Override bool
	// Recovering says that an earlier attempt with this key never
	// finished: observe, do not actuate (see DoHandler).
	Recovering bool
	// Begin makes the attempt durable (the key in flight, the audit
	// "attempt" record). A handler of a tool with BeginsItself calls it
	// once, after its decision and before it touches the device, and
	// returns its error as is without actuating; otherwise it is nil (the
	// server began the attempt already).
	Begin func(ctx context.Context) error
	// BeginSafe is Begin for a move to the declared safe value
	// (policy.TowardSafe): it never refuses; what a full state disk keeps
	// it from recording is recorded as soon as it can be (docs/policy.md, "A full state disk").
	// Nil where Begin is.
	BeginSafe func(ctx context.Context) error
}

// CanDoHandler answers can_do. The server fills query_id, metadata and the
// empty lists where left zero, and derives feasible from the candidates.
type CanDoHandler func(ctx context.Context, req promcp.CanDoRequest) (promcp.CapabilityReport, error)

// Server is a proMCP server: a builder of read_*, do_* and can_do tools over
// an mcp-go server that enforces the contract on every response.
type Server struct {
	mcp       *mcpserver.MCPServer
	clock     clock.Clock
	log       *slog.Logger
	store     idempotency.Store
	keyTTL    time.Duration
	validator *promcp.Validator
	tools     []Tool
	auditor   Auditor
	authorize Authorizer
	roles     *Roles // WithRoles: the policy's roles, for the refusal's words
	readOnly  bool

	mu       sync.Mutex
	closing  bool
	inflight sync.WaitGroup

	instructions string
	listChanged  bool             // WithToolsListChanged
	approvals    *approval.Signer // out-of-band approvals; nil disables them
	ledger       approval.Ledger
	refuseDo     string           // why every do_* is refused, when it is (no policy)
	elicit       *approval.Signer // signs the state elicitation round-trips
	desk         *Desk            // the calls waiting for approval in the operator console; nil: none

	name, version string
	provenance    map[string]map[string]any             // by tool; written at registration only
	stampTail     map[string][]byte                     // the fixed keys of each tool's stamp, encoded (finish)
	stamps        map[string]*atomic.Pointer[stampMemo] // each read tool's last stamp (finish)
	standing      map[string]*standing                  // each tool's published standing part (standing.go)
	schemaMu      sync.Mutex                            // guards schemas
	schemas       map[string]json.RawMessage            // output schemas by what they are made of (sharedSchema)
	lists         listCache                             // the encoded tools/list pages (toolslist.go)
	front         readFront                             // the read front's placeholders (readfront.go)

	placement                    Placement // where the provenance envelope goes
	manifestDigest, policyDigest string    // the envelope's warrant (WithWarrant)

	extraMCP []mcpserver.ServerOption // more mcp-go options (WithTasks)
	tasks    *taskIndex               // ties task calls to tasks/cancel (WithTasks); nil without
	live     *subscriptions           // resources and their subscribers (WithResources); nil: none
	observer Observer                 // told of calls and sessions (WithObserver); nil: none
	mesh     *meshHolder              // answers physmcp/* (mesh.go); shared with surfaces
}

// Tool is a registered tool with its kind, as served.
type Tool struct {
	Kind promcp.Kind
	MCP  mcp.Tool
}

// ToolsPageSize is the most tools one tools/list answer holds; a larger
// list is paged with the protocol's cursor (nextCursor). A gateway of up
// to this many tools answers in one page, as before.
const ToolsPageSize = 100

// Option configures a Server.
type Option func(*Server)

// WithClock sets the clock that stamps responses.
func WithClock(c clock.Clock) Option { return func(s *Server) { s.clock = c } }

// WithLogger sets the logger; nil discards logs.
func WithLogger(l *slog.Logger) Option { return func(s *Server) { s.log = l } }

// WithStore sets the idempotency store. The default keeps outcomes in
// memory for idempotency.DefaultTTL.
func WithStore(st idempotency.Store, ttl time.Duration) Option {
	return func(s *Server) { s.store, s.keyTTL = st, ttl }
}

// WithAuditor sets where do_* attempts, results and refusals are recorded.
// With an auditor, a call whose attempt record cannot be written does not
// reach its handler (fail closed). The default records nothing.
func WithAuditor(a Auditor) Option {
	return func(s *Server) {
		if a != nil {
			a = &backlog{next: a} // keeps the records of safe moves a full disk refused
		}
		s.auditor = a
	}
}

// WithAuthorizer sets who may call which kind of tool. The default is
// DefaultAuthorizer.
func WithAuthorizer(a Authorizer) Option { return func(s *Server) { s.authorize = a } }

// WithReadOnly makes Do register nothing: the server serves read_* and
// can_do only.
func WithReadOnly() Option { return func(s *Server) { s.readOnly = true } }

// WithInstructions sets the instructions the server gives clients at
// initialisation.
func WithInstructions(text string) Option {
	return func(s *Server) { s.instructions = text }
}

// WithApprovals accepts out-of-band approval tokens signed with signer
// (see package approval and `promcp-device approve`).
func WithApprovals(signer *approval.Signer) Option {
	return func(s *Server) { s.approvals = signer }
}

// WithLedger keeps the spent approval tokens in l (boltledger.BoltLedger
// under --state, so that a token works once across restarts). The default
// is in memory.
func WithLedger(l approval.Ledger) Option { return func(s *Server) { s.ledger = l } }

// WithRefuseDo registers do_* tools as usual but refuses every call with
// policy_denied and reason, and can_do blocks every action with it: a
// gateway that must not actuate (its policy is missing) still serves
// read_* and can_do, and says why.
func WithRefuseDo(reason string) Option { return func(s *Server) { s.refuseDo = reason } }

// WithToolsListChanged declares tools.listChanged and sends
// notifications/tools/list_changed to every session when tools are added
// to or removed from MCP() while serving (a fleet endpoint does, as
// gateways join and leave).
func WithToolsListChanged() Option { return func(s *Server) { s.listChanged = true } }

// New returns a Server with no tools.
func New(name, version string, opts ...Option) (*Server, error) {
	s := &Server{clock: clock.System{}, ledger: approval.NewLedger(), elicit: approval.NewRandomSigner(),
		name: name, version: version, provenance: map[string]map[string]any{}}
	s.mesh = &meshHolder{srv: s}
	for _, o := range opts {
		o(s)
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.mesh.started = s.clock.Now().UTC()
	switch s.placement {
	case "":
		s.placement = ProvenanceMeta
	case ProvenanceMeta, ProvenanceInline:
	default:
		return nil, fmt.Errorf("provenance placement %q: want %s or %s", s.placement, ProvenanceMeta, ProvenanceInline)
	}
	if s.authorize == nil {
		s.authorize = DefaultAuthorizer
	}
	if s.store == nil {
		s.keyTTL = idempotency.DefaultTTL
		s.store = idempotency.NewMemory(s.keyTTL, s.clock)
	}
	v, err := promcp.NewValidator()
	if err != nil {
		return nil, err
	}
	s.validator = v
	mopts := []mcpserver.ServerOption{
		mcpserver.WithToolCapabilities(s.listChanged),
		mcpserver.WithRecovery(),
		mcpserver.WithElicitation(),
		mcpserver.WithPaginationLimit(ToolsPageSize),
	}
	if s.instructions != "" {
		mopts = append(mopts, mcpserver.WithInstructions(s.instructions))
	}
	mopts = append(mopts, s.extraMCP...)
	// mcp-go keeps one Hooks (the last WithHooks): tasks and resources
	// add theirs to the same one.
	hooks := &mcpserver.Hooks{}
	if s.tasks != nil {
		mopts = append(mopts, s.tasks.options(hooks)...)
	}
	if s.live != nil {
		mopts = append(mopts, s.live.options(hooks)...)
	}
	mopts = append(mopts, mcpserver.WithHooks(hooks))
	s.mcp = mcpserver.NewMCPServer(name, version, mopts...)
	return s, nil
}

// Clock returns the clock that stamps responses (WithClock).
func (s *Server) Clock() clock.Clock { return s.clock }

// Logger returns the server's logger (WithLogger).
func (s *Server) Logger() *slog.Logger { return s.log }

// MCP returns the underlying mcp-go server, for transports.
func (s *Server) MCP() *mcpserver.MCPServer { return s.mcp }

// Tools returns the registered tools in registration order.
func (s *Server) Tools() []Tool { return slices.Clone(s.tools) }

var snake = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z][a-z0-9]*(_[a-z0-9]+)*$`) })

func (s *Server) checkName(name string, kind promcp.Kind) error {
	k, ok := promcp.KindOf(name)
	if !ok || k != kind || !snake().MatchString(name) {
		want := map[promcp.Kind]string{promcp.KindRead: "read_<snake_case>", promcp.KindDo: "do_<snake_case>", promcp.KindCanDo: "can_do"}[kind]
		return fmt.Errorf("tool name %q: want %s", name, want)
	}
	for _, t := range s.tools {
		if t.MCP.Name == name {
			return fmt.Errorf("tool %q is already registered", name)
		}
	}
	return nil
}

// register compiles the tool's schemas (failing registration when one does
// not compile) and adds it to the MCP server.
func (s *Server) register(kind promcp.Kind, tool mcp.Tool, source string, st Standing, h mcpserver.ToolHandlerFunc) error {
	if tool.RawInputSchema == nil || tool.RawOutputSchema == nil {
		return fmt.Errorf("tool %s: input and output schemas are required", tool.Name)
	}
	if s.placement == ProvenanceInline {
		out, err := withEnvelopeSchema(tool.RawOutputSchema)
		if err != nil {
			return fmt.Errorf("tool %s: output schema: %w", tool.Name, err)
		}
		tool.RawOutputSchema = out
	}
	if _, err := s.validator.Compile("in:"+tool.Name, tool.RawInputSchema); err != nil {
		return fmt.Errorf("tool %s: input schema: %w", tool.Name, err)
	}
	if _, err := s.validator.Compile("out:"+tool.Name, tool.RawOutputSchema); err != nil {
		return fmt.Errorf("tool %s: output schema: %w", tool.Name, err)
	}
	s.provenance[tool.Name] = provenance(s.name, s.version, kind, tool, source, s.placement)
	if s.stampTail == nil { // at the first registration, on every surface
		s.stampTail, s.stamps = map[string][]byte{}, map[string]*atomic.Pointer[stampMemo]{}
		s.standing = map[string]*standing{}
		s.mcp.AddResourceTemplate(standingTemplate(), s.readStanding)
	}
	tool = s.publish(tool, st)
	s.tools = append(s.tools, Tool{Kind: kind, MCP: tool})
	s.stampTail[tool.Name] = stampTail(s.provenance[tool.Name])
	if kind == promcp.KindRead {
		s.stamps[tool.Name] = &atomic.Pointer[stampMemo]{}
	}
	s.mcp.AddTool(tool, s.observed(kind, tool.Name, h))
	s.lists.drop() // the list changed
	return nil
}

// Read registers a read_* tool.
func (s *Server) Read(t ReadTool, h ReadHandler) error {
	if err := s.checkName(t.Name, promcp.KindRead); err != nil {
		return err
	}
	if h == nil {
		return fmt.Errorf("tool %s: nil handler", t.Name)
	}
	out, err := s.sharedSchema(schemaKey(promcp.KindRead, t.Unit, t.Value), func() (json.RawMessage, error) { return readOutputSchema(t) })
	if err != nil {
		return err
	}
	tool := mcp.Tool{
		Name:            t.Name,
		Title:           t.Title,
		Description:     t.Description,
		RawInputSchema:  mustJSON(readInputSchemaWith(t.Args)),
		RawOutputSchema: out,
		Annotations:     annotations(promcp.KindRead, false, t.Title),
	}
	typed := typedReadCheck(t)
	memo := &argMemo{m: map[string]map[string]any{}}
	return s.register(promcp.KindRead, tool, t.Source, t.Standing, func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		args, argErr := memo.arguments(s, t.Name, req)
		var res promcp.ReadResult
		if argErr != nil {
			res = promcp.ReadResult{Unit: t.Unit, Quality: promcp.QualityError, Error: argErr}
		} else {
			var err error
			res, err = h(ctx, ReadRequest{Tool: t.Name, Args: args, Caller: CallerFrom(ctx)})
			if err != nil {
				s.log.Error("read handler failed", "tool", t.Name, "err", err)
				res = promcp.ReadResult{Unit: t.Unit, Quality: promcp.QualityError,
					Error: &promcp.Error{Code: promcp.CodeInternal, Message: err.Error()}}
			}
		}
		if res.Timestamp.IsZero() {
			res.Timestamp = s.clock.Now()
		}
		res.Timestamp = res.Timestamp.UTC()
		if res.Quality == promcp.QualityError {
			res.Value = nil
		}
		verr := res.Validate()
		checked := "json-schema"
		if verr == nil && typed != nil {
			// The typed check is the output schema's, without a JSON decode.
			if verr, checked = typed(res), "typed"; verr == nil {
				if r := s.frontReuse(ctx, &req, argErr, t.Name, res, res.Quality == promcp.QualityError, checked); r != nil {
					return r, nil // a cached sample, its bytes written by the read front (readfront.go)
				}
				return s.encode(t.Name, res, res.Quality == promcp.QualityError)
			}
		}
		if verr == nil && checked == "json-schema" {
			if r := s.frontReuse(ctx, &req, argErr, t.Name, res, res.Quality == promcp.QualityError, checked); r != nil {
				return r, nil
			}
		}
		return s.result(t.Name, res, verr, res.Quality == promcp.QualityError)
	})
}

// Do registers a do_* tool. On a read-only server (WithReadOnly) it checks
// the declaration and registers nothing.
func (s *Server) Do(t DoTool, h DoHandler) error {
	if err := s.checkName(t.Name, promcp.KindDo); err != nil {
		return err
	}
	if h == nil {
		return fmt.Errorf("tool %s: nil handler", t.Name)
	}
	if s.readOnly {
		return nil
	}
	if t.SideEffects == nil {
		t.SideEffects = []string{}
	}
	in := doInputSchema(t.Value)
	if t.ValueOptional {
		delete(in, "required")
	}
	if s.approvals != nil {
		in["properties"].(map[string]any)["approval"] = approvalArgSchema
	}
	out, err := s.sharedSchema(schemaKey(promcp.KindDo, "", t.Value), func() (json.RawMessage, error) { return doOutputSchema(t) })
	if err != nil {
		return err
	}
	// The server checks the value's type with the bounds left out, so that
	// bounds are refused by policy with the out_of_range permission.
	typed := doInputSchema(withoutBounds(t.Value))
	typed["properties"].(map[string]any)["approval"] = approvalArgSchema
	if t.ValueOptional {
		delete(typed, "required")
	}
	if _, err := s.validator.Compile("type:"+t.Name, mustJSON(typed)); err != nil {
		return fmt.Errorf("tool %s: value schema: %w", t.Name, err)
	}
	desc := t.Description + doDescriptionSuffix(t, s.keyTTL)
	tool := mcp.Tool{
		Name:            t.Name,
		Title:           t.Title,
		Description:     desc,
		RawInputSchema:  mustJSON(in),
		RawOutputSchema: out,
		Annotations:     annotations(promcp.KindDo, t.Compensable, t.Title),
	}
	if t.Await != nil {
		tool.Execution = &mcp.ToolExecution{TaskSupport: mcp.TaskSupportOptional}
	}
	return s.register(promcp.KindDo, tool, t.Source, t.Standing, func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if req.Params.Task != nil {
			// mcp-go cancels a task's context once tools/call has answered
			// with the task; tasks/cancel reaches Await through s.tasks.
			ctx = context.WithoutCancel(ctx)
		}
		res, input := s.do(ctx, t, h, req)
		if input != nil {
			return input, nil
		}
		if t.Await != nil && req.Params.Task != nil && res.Status != promcp.StatusFailed {
			res = s.await(ctx, t, req, res)
		}
		ok := res.Status == promcp.StatusSuccess
		res.Success = &ok // PhysMCP's answer, beside status
		return s.result(t.Name, res, res.Validate(), res.Status == promcp.StatusFailed)
	})
}

// CanDo registers the can_do tool.
func (s *Server) CanDo(description string, h CanDoHandler) error {
	if err := s.checkName("can_do", promcp.KindCanDo); err != nil {
		return err
	}
	if h == nil {
		return errors.New("tool can_do: nil handler")
	}
	out, err := promcp.Schema(promcp.KindCanDo)
	if err != nil {
		return err
	}
	tool := mcp.Tool{
		Name:            "can_do",
		Title:           "Can do?",
		Description:     description,
		RawInputSchema:  mustJSON(canDoInputSchema()),
		RawOutputSchema: out,
		Annotations:     annotations(promcp.KindCanDo, false, "Can do?"),
	}
	// Agents ask the same few intents again before acting: arguments that
	// passed the input schema are remembered (argMemo), not checked anew.
	memo := &argMemo{m: map[string]map[string]any{}}
	return s.register(promcp.KindCanDo, tool, "", Standing{Driver: "policy", Model: "policy", Rebuttal: []string{canDoStanding}}, func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		start := time.Now()
		rep, failed := s.canDo(ctx, h, req, memo)
		caller := CallerFrom(ctx)
		// An answer given again whose encoding is kept: only its per-call
		// parts are made (candomemo.go).
		keep := s.memoable(rep, failed)
		if keep {
			// Over HTTP, its members' bytes go out as they are (readfront.go).
			if res := s.frontFromMemo(ctx, &req, rep.Memo, caller, start); res != nil {
				return res, nil
			}
			if res := s.fromMemo(rep.Memo, caller, start); res != nil {
				return res, nil
			}
		}
		s.restrictCandidates(caller, &rep)
		if rep.QueryID == "" {
			rep.QueryID = newUUID()
		}
		if rep.Metadata.Timestamp.IsZero() {
			rep.Metadata.Timestamp = s.clock.Now()
		}
		rep.Metadata.Timestamp = rep.Metadata.Timestamp.UTC()
		rep.Metadata.TotalLatencyMS = time.Since(start).Milliseconds()
		rep.Normalize()
		verr := rep.Validate()
		if verr == nil {
			// The typed check is the output schema's (kept equal to it by
			// promcp's TestCheckSchemaEqualsSchema), without a JSON decode.
			if verr = rep.CheckSchema(); verr == nil {
				res, err := s.encode("can_do", rep, failed)
				if keep && err == nil {
					s.keepEncoded(rep, caller, res)
				}
				return res, err
			}
		}
		return s.result("can_do", rep, verr, failed)
	})
}

func (s *Server) canDo(ctx context.Context, h CanDoHandler, req mcp.CallToolRequest, memo *argMemo) (promcp.CapabilityReport, bool) {
	q, scope, perr := memo.question(s, req)
	if perr != nil {
		return promcp.CapabilityReport{Error: perr}, true
	}
	grounds := &promcp.Evidence{Grounds: &promcp.CanDoGrounds{Intent: q.Intent, Scope: scope}}
	rep, err := h(ctx, q)
	if err != nil {
		s.log.Error("can_do handler failed", "err", err)
		return promcp.CapabilityReport{Error: &promcp.Error{Code: promcp.CodeInternal, Message: err.Error()}, Evidence: grounds}, true
	}
	if rep.Evidence == nil {
		rep.Evidence = grounds
	}
	return rep, false
}

// arguments checks the raw arguments against the tool's input schema and
// decodes them.
func (s *Server) arguments(tool string, req mcp.CallToolRequest) (map[string]any, *promcp.Error) {
	return s.argumentsFor("in:"+tool, req)
}

// argumentsFor decodes the arguments, checked against the schema compiled
// under schema. On error the arguments decoded so far are still returned,
// so that a given idempotency_key can be echoed.
func (s *Server) argumentsFor(schema string, req mcp.CallToolRequest) (map[string]any, *promcp.Error) {
	raw := rawArguments(req)
	var args map[string]any
	if err := json.Unmarshal(raw, &args); err != nil || args == nil {
		return map[string]any{}, &promcp.Error{Code: promcp.CodeInvalidArgument, Message: "arguments must be a JSON object"}
	}
	if field, bad := invalidText(raw); bad {
		// Decoding replaced the bad bytes with U+FFFD, so that two different
		// keys would look alike: refuse, and never echo the mangled key.
		if field == "idempotency_key" {
			delete(args, "idempotency_key")
		}
		return args, &promcp.Error{Code: promcp.CodeInvalidArgument, Field: field,
			Message: fmt.Sprintf("%s is not valid UTF-8 text (invalid bytes or an unpaired \\u surrogate escape); "+
				"arguments are compared byte for byte, so send valid UTF-8", field)}
	}
	if e := numberOutOfRange(args); e != nil {
		return args, e
	}
	if err := s.validator.Validate(schema, raw); err != nil {
		field, msg := schemaMessage(err)
		return args, &promcp.Error{Code: promcp.CodeInvalidArgument, Field: field, Message: msg}
	}
	return args, nil
}

// invalidText reports the first top-level argument (by name, or
// "arguments" for a name itself) whose JSON text holds invalid UTF-8 or a
// \u escape of an unpaired surrogate: text that encoding/json would
// silently replace with U+FFFD.
func invalidText(raw []byte) (field string, bad bool) {
	if utf8.Valid(raw) && !bytes.Contains(raw, []byte(`\u`)) {
		return "", false // the common case
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return "arguments", true
	}
	names := slices.Sorted(maps.Keys(fields))
	for _, name := range names {
		if !validJSONText(fields[name]) {
			return name, true
		}
	}
	// Keys are decoded with the same replacement: check them as written.
	if !validJSONText(raw) {
		return "arguments", true
	}
	return "", false
}

// validJSONText reports whether JSON text b is valid UTF-8 and every \u
// escape in it that names a surrogate is one half of a pair.
func validJSONText(b []byte) bool {
	if !utf8.Valid(b) {
		return false
	}
	hex4 := func(i int) (rune, bool) {
		if i+6 > len(b) || b[i] != '\\' || b[i+1] != 'u' {
			return 0, false
		}
		n, err := strconv.ParseUint(string(b[i+2:i+6]), 16, 16)
		return rune(n), err == nil
	}
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' || i+1 >= len(b) {
			continue
		}
		if b[i+1] != 'u' {
			i++ // an escaped character, possibly a backslash
			continue
		}
		r, ok := hex4(i)
		if !ok {
			return false
		}
		switch {
		case utf16.IsSurrogate(r) && r < 0xdc00: // a high half: a low half must follow
			lo, ok := hex4(i + 6)
			if !ok || lo < 0xdc00 || lo > 0xdfff {
				return false
			}
			i += 11
		case utf16.IsSurrogate(r): // a low half alone
			return false
		default:
			i += 5
		}
	}
	return true
}

func rawArguments(req mcp.CallToolRequest) []byte {
	if len(req.Params.RawArguments) > 0 && string(req.Params.RawArguments) != "null" {
		return req.Params.RawArguments
	}
	if req.Params.Arguments == nil {
		return []byte("{}")
	}
	b, err := json.Marshal(req.Params.Arguments)
	if err != nil {
		return []byte("null")
	}
	return b
}

// result turns a typed body into a tool result. A body that breaks the
// contract is never sent: it is logged and replaced by an internal error of
// the same kind, which the caller can still parse.
// encode sends a body already checked against the contract.
func (s *Server) encode(tool string, body any, isError bool) (*mcp.CallToolResult, error) {
	if res := s.reuse(tool, body, isError, "typed"); res != nil {
		return res, nil // a cached sample read again: encoded once
	}
	b, err := json.Marshal(body)
	if err != nil {
		return s.contractFailure(tool, err), nil
	}
	return s.finish(tool, body, b, isError, "typed"), nil
}

func (s *Server) result(tool string, body any, verr error, isError bool) (*mcp.CallToolResult, error) {
	if verr == nil {
		if res := s.reuse(tool, body, isError, "json-schema"); res != nil {
			return res, nil // the same body, validated as the same bytes before
		}
	}
	b, err := json.Marshal(body)
	if err == nil && verr == nil {
		err = s.validator.Validate("out:"+tool, b)
	}
	if err == nil {
		err = verr
	}
	if err != nil {
		s.log.Error("response breaks the proMCP contract; sending an internal error instead", "tool", tool, "err", err)
		return s.contractFailure(tool, err), nil
	}
	// The validated bytes are sent as they are: structuredContent and its
	// text copy are the same JSON, and no second decode is needed.
	return s.finish(tool, body, b, isError, "json-schema"), nil
}

func (s *Server) contractFailure(tool string, cause error) *mcp.CallToolResult {
	now := s.clock.Now().UTC()
	e := &promcp.Error{Code: promcp.CodeInternal, Message: "the server produced an invalid response: " + cause.Error()}
	var body any
	kind, _ := promcp.KindOf(tool)
	switch kind {
	case promcp.KindRead:
		body = promcp.ReadResult{Timestamp: now, Quality: promcp.QualityError, Error: e}
	case promcp.KindDo:
		body = promcp.DoResult{Status: promcp.StatusFailed, IdempotencyKey: "none", SideEffects: []string{}, Timestamp: now, Error: e, Reason: e.Message}
	default:
		rep := promcp.CapabilityReport{QueryID: newUUID(), Metadata: promcp.ReportMetadata{Timestamp: now}, Error: e}
		rep.Normalize()
		body = rep
	}
	b, _ := json.Marshal(body)
	return s.finish(tool, body, b, true, "replaced")
}

// schemaMessage turns a schema validation error into the argument at
// fault (as a dotted path, "" for the whole object) and a message.
func schemaMessage(err error) (field, msg string) {
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return "", "arguments do not match the input schema: " + err.Error()
	}
	var parts []string
	var fields []string
	for _, l := range leaves(ve) {
		f := strings.Join(l.InstanceLocation, ".")
		fields = append(fields, f)
		where := "arguments"
		if f != "" {
			where = "argument " + f
		}
		parts = append(parts, where+": "+l.ErrorKind.LocalizedString(message.NewPrinter(language.English)))
	}
	if len(fields) == 1 {
		field = fields[0]
	}
	return field, strings.Join(parts, "; ")
}

func leaves(ve *jsonschema.ValidationError) []*jsonschema.ValidationError {
	if len(ve.Causes) == 0 {
		return []*jsonschema.ValidationError{ve}
	}
	var out []*jsonschema.ValidationError
	for _, c := range ve.Causes {
		out = append(out, leaves(c)...)
	}
	return out
}

// fingerprint identifies a call by tool and arguments (without the key).
func fingerprint(tool string, args map[string]any) string {
	m := maps.Clone(args)
	delete(m, "idempotency_key")
	b, _ := json.Marshal(m) // map keys marshal sorted: canonical enough
	sum := sha256.Sum256(append([]byte(tool+"\x00"), b...))
	return hex.EncodeToString(sum[:])
}

func newKey() string { return "auto-" + newUUID() }

func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("server: schema literal does not marshal: %v", err)) // programming error in this package
	}
	return b
}
