// Command ringctl administers a ringbroker (or any Kafka) cluster through the
// Kafka admin protocol (franz-go's kadm), in the spirit of kafka-topics.sh and
// kafka-consumer-groups.sh.
//
//	ringctl [-b host:port[,host:port]] <noun> <verb> [args] [--json]
//
//	topic create NAME [--partitions N] [--replication-factor R] [--config k=v ...]
//	topic list [--internal]
//	topic describe NAME...
//	topic delete NAME...
//	topic alter-config NAME [--set k=v ...] [--delete k ...]
//	topic add-partitions NAME (--partitions TOTAL | --add N)
//	group list
//	group describe GROUP...                 members and lag (committed vs end offsets)
//	group reset-offsets GROUP --topic T (--to-earliest | --to-latest | --to-offset N) [--partition P] [--dry-run]
//	group delete GROUP...
//	cluster info
//	broker list
//	log-dirs [--topic T]
//	produce TOPIC [VALUE...]                values from the arguments, else one per stdin line
//	consume TOPIC [-n N] [--partition P]    from the start; exits after N records or at the end offsets
//
// The broker list comes from -b (or --brokers), else $RINGCTL_BROKERS, else
// 127.0.0.1:9092. Output is a human table unless --json is given, which
// prints one JSON document (consume prints one JSON object per record).
//
// Exit status: 0 success; 1 the operation failed (a Kafka error code, named in
// the message with what to do); 2 usage error (unknown command or flag, missing
// argument); 3 no broker could be reached within --timeout (default 10s), or
// the broker closed the connection mid-request.
//
// `ringctl <command> [<verb>] --help` (or -h, or `ringctl help <command>`)
// prints that command's help and never contacts a broker. The flags are parsed
// with the standard library's flag package, one FlagSet per command.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"sort"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Exit statuses.
const (
	exitOK          = 0
	exitFailed      = 1
	exitUsage       = 2
	exitUnreachable = 3
)

const defaultBroker = "127.0.0.1:9092"

// exitError carries the status the process exits with.
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }

func usageErr(format string, args ...any) error {
	return &exitError{code: exitUsage, msg: fmt.Sprintf(format, args...) + "; see `ringctl help`"}
}

func failed(format string, args ...any) error {
	return &exitError{code: exitFailed, msg: fmt.Sprintf(format, args...)}
}

// env is what every command gets: the parsed global options, the admin and
// the plain client (opened lazily), and where to write.
type env struct {
	brokers []string
	json    bool
	timeout time.Duration
	out     io.Writer
	errOut  io.Writer
	in      io.Reader

	cl  *kgo.Client
	adm *kadm.Client

	// help is set by -h/--help anywhere on the line: the command prints its
	// help and must not act.
	help bool
}

func main() {
	code := run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	os.Exit(code)
}

const usage = `usage: ringctl [-b host:port] <noun> <verb> [args] [--json] [--timeout 10s]

  topic create NAME [--partitions N] [--replication-factor R] [--config k=v ...]
  topic list [--internal]
  topic describe NAME...
  topic delete NAME...
  topic alter-config NAME [--set k=v ...] [--delete k ...]
  topic add-partitions NAME (--partitions TOTAL | --add N)
  group list
  group describe GROUP...
  group reset-offsets GROUP --topic T (--to-earliest|--to-latest|--to-offset N) [--partition P] [--dry-run]
  group delete GROUP...
  cluster info
  broker list
  log-dirs [--topic T]
  produce TOPIC [VALUE...] [--key K] [--partition P] [--acks all|1|0]
  consume TOPIC [-n N] [--partition P]

Brokers: -b/--brokers, else $RINGCTL_BROKERS, else 127.0.0.1:9092.
Help: ringctl <command> [<verb>] --help prints that command's help and acts on nothing.
Exit status: 0 ok, 1 operation failed, 2 usage error, 3 broker unreachable or connection closed.
`

// run is main without the process: it returns the exit status.
func run(args []string, in io.Reader, out, errOut io.Writer) int {
	e := &env{out: out, errOut: errOut, in: in, timeout: 10 * time.Second}
	rest, err := e.parseGlobal(args)
	if err == nil {
		err = e.dispatch(rest)
	}
	if e.cl != nil {
		e.cl.Close()
	}
	if err == nil {
		return exitOK
	}
	var ee *exitError
	if !errors.As(err, &ee) {
		ee = &exitError{code: exitFailed, msg: err.Error()}
	}
	fmt.Fprintln(errOut, "ringctl:", ee.msg)
	return ee.code
}

// parseGlobal removes the global options (-b/--brokers, --json, --timeout)
// from anywhere in args and returns what is left.
func (e *env) parseGlobal(args []string) ([]string, error) {
	brokers := os.Getenv("RINGCTL_BROKERS")
	var rest []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, val, hasVal := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") || a == "-" {
			rest = append(rest, a)
			continue
		}
		if a == "--" {
			rest = append(rest, args[i:]...)
			break
		}
		takeVal := func() (string, error) {
			if hasVal {
				return val, nil
			}
			if i+1 >= len(args) {
				return "", usageErr("flag %s needs a value", a)
			}
			i++
			return args[i], nil
		}
		switch name {
		case "b", "brokers", "bootstrap-server":
			v, err := takeVal()
			if err != nil {
				return nil, err
			}
			brokers = v
		case "json":
			e.json = true
		case "timeout":
			v, err := takeVal()
			if err != nil {
				return nil, err
			}
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 {
				return nil, usageErr("cannot parse --timeout %q: want a positive duration such as 10s", v)
			}
			e.timeout = d
		case "h", "help":
			e.help = true
		default:
			rest = append(rest, a)
		}
	}
	if brokers == "" {
		brokers = defaultBroker
	}
	for _, b := range strings.Split(brokers, ",") {
		if b = strings.TrimSpace(b); b != "" {
			if _, _, err := net.SplitHostPort(b); err != nil {
				return nil, usageErr("broker %q is not host:port", b)
			}
			e.brokers = append(e.brokers, b)
		}
	}
	return rest, nil
}

type command struct {
	run  func(e *env, args []string) error
	help string
}

var commands = map[string]map[string]command{
	"topic": {
		"create":         {topicCreate, "topic create NAME [--partitions N] [--replication-factor R] [--config k=v ...]"},
		"list":           {topicList, "topic list [--internal]"},
		"describe":       {topicDescribe, "topic describe NAME..."},
		"delete":         {topicDelete, "topic delete NAME..."},
		"alter-config":   {topicAlterConfig, "topic alter-config NAME [--set k=v ...] [--delete k ...]"},
		"add-partitions": {topicAddPartitions, "topic add-partitions NAME (--partitions TOTAL | --add N)"},
	},
	"group": {
		"list":          {groupList, "group list"},
		"describe":      {groupDescribe, "group describe GROUP..."},
		"reset-offsets": {groupResetOffsets, "group reset-offsets GROUP --topic T (--to-earliest|--to-latest|--to-offset N) [--partition P] [--dry-run]"},
		"delete":        {groupDelete, "group delete GROUP..."},
	},
	"cluster": {"info": {clusterInfo, "cluster info"}},
	"broker":  {"list": {brokerList, "broker list"}},
}

// single-word commands.
var verbs = map[string]command{
	"log-dirs": {logDirs, "log-dirs [--topic T]"},
	"produce":  {produce, "produce TOPIC [VALUE...] [--key K] [--partition P] [--acks all|1|0]"},
	"consume":  {consume, "consume TOPIC [-n N] [--partition P]"},
}

func (e *env) dispatch(args []string) error {
	if len(args) > 0 && args[0] == "help" {
		e.help = true
		args = args[1:]
	}
	if len(args) == 0 {
		if e.help {
			fmt.Fprint(e.out, usage)
			return nil
		}
		fmt.Fprint(e.errOut, usage)
		return &exitError{code: exitUsage, msg: "missing command"}
	}
	if c, ok := verbs[args[0]]; ok {
		return e.runCommand(c, args[1:])
	}
	nouns, ok := commands[args[0]]
	if !ok {
		return usageErr("unknown command %q", args[0])
	}
	if len(args) < 2 {
		if e.help {
			e.nounHelp(e.out, nouns)
			return nil
		}
		e.nounHelp(e.errOut, nouns)
		return usageErr("%s needs a verb: %s", args[0], strings.Join(sortedKeys(nouns), ", "))
	}
	c, ok := nouns[args[1]]
	if !ok {
		e.nounHelp(e.errOut, nouns)
		return usageErr("unknown verb %q for %s; want one of %s", args[1], args[0], strings.Join(sortedKeys(nouns), ", "))
	}
	return e.runCommand(c, args[2:])
}

// nounHelp lists the verbs of one noun.
func (e *env) nounHelp(w io.Writer, nouns map[string]command) {
	fmt.Fprintln(w, "usage:")
	for _, k := range sortedKeys(nouns) {
		fmt.Fprintf(w, "  ringctl %s\n", nouns[k].help)
	}
}

// runCommand runs c, or with --help prints its help without acting: the
// command is run with only -h so that it stops in parseFlags, and connect
// refuses in help mode as a second guard. A usage error prints the command's
// usage line to stderr.
func (e *env) runCommand(c command, args []string) error {
	if e.help {
		err := c.run(e, []string{"-h"})
		var he *helpError
		if !errors.As(err, &he) {
			return failed("internal error: %s --help did not stop at its flags: %v", c.help, err)
		}
		fmt.Fprintf(e.out, "usage: ringctl %s\n", c.help)
		if he.flags != "" {
			fmt.Fprintf(e.out, "\nflags:\n%s", he.flags)
		}
		fmt.Fprintf(e.out, "\nglobal flags: -b/--brokers host:port[,host:port], --json, --timeout 10s\n")
		return nil
	}
	err := c.run(e, args)
	var ee *exitError
	if errors.As(err, &ee) && ee.code == exitUsage {
		fmt.Fprintf(e.errOut, "usage: ringctl %s\n", c.help)
	}
	return err
}

// helpError is what parseFlags returns for -h: the command's flag defaults.
type helpError struct{ flags string }

func (h *helpError) Error() string { return "help requested" }

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// parseFlags parses fs with flags and positional arguments in any order.
func parseFlags(fs *flag.FlagSet, args []string) ([]string, error) {
	fs.SetOutput(io.Discard)
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				var b strings.Builder
				fs.SetOutput(&b)
				fs.PrintDefaults()
				return nil, &helpError{flags: b.String()}
			}
			return nil, usageErr("%s: %v", fs.Name(), err)
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		if args[0] == "--" {
			return append(pos, args[1:]...), nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// multiFlag is a repeatable string flag.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

// connect probes the brokers with a TCP dial, then opens the clients. An
// unreachable cluster is exit status 3.
func (e *env) connect(opts ...kgo.Opt) error {
	if e.cl != nil {
		return nil
	}
	if e.help {
		return failed("internal error: a command tried to reach the broker while printing its help")
	}
	dialTimeout := min(e.timeout, 5*time.Second)
	var lastErr error
	reached := false
	for _, b := range e.brokers {
		c, err := net.DialTimeout("tcp", b, dialTimeout)
		if err == nil {
			c.Close()
			reached = true
			break
		}
		lastErr = err
	}
	if !reached {
		return &exitError{code: exitUnreachable, msg: fmt.Sprintf("cannot reach broker %s: %v; check that ringbroker runs and listens there (-b host:port or $RINGCTL_BROKERS)",
			strings.Join(e.brokers, ","), lastErr)}
	}
	base := []kgo.Opt{
		kgo.SeedBrokers(e.brokers...),
		kgo.ClientID("ringctl"),
		kgo.DialTimeout(dialTimeout),
		kgo.RetryTimeout(e.timeout),
		kgo.RequestTimeoutOverhead(e.timeout),
	}
	cl, err := kgo.NewClient(append(base, opts...)...)
	if err != nil {
		return failed("cannot create client: %v", err)
	}
	e.cl = cl
	e.adm = kadm.NewClient(cl)
	return nil
}

// ctx bounds one command by --timeout.
func (e *env) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), e.timeout)
}

// reqErr turns a request-level error (not a per-resource Kafka error) into
// an exitError: unreachable brokers (or a connection the broker closed) are status 3, Kafka errors name their
// code.
func (e *env) reqErr(what string, err error) error {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return kafkaErr(ke, "", what)
	}
	var eof *kgo.ErrFirstReadEOF
	if errors.As(err, &eof) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) {
		return &exitError{code: exitUnreachable, msg: fmt.Sprintf("cannot %s: connection closed by broker %s before it answered; check the broker's log (did it stop or crash?)", what, strings.Join(e.brokers, ","))}
	}
	var ne net.Error
	if errors.As(err, &ne) && !ne.Timeout() || errors.Is(err, kgo.ErrClientClosed) {
		return &exitError{code: exitUnreachable, msg: fmt.Sprintf("cannot %s: broker unreachable: %v", what, err)}
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return &exitError{code: exitUnreachable, msg: fmt.Sprintf("cannot %s: no answer within --timeout %v: %v", what, e.timeout, err)}
	}
	if strings.Contains(err.Error(), "too old") {
		return failed("cannot %s: the broker does not implement this request (%v)", what, err)
	}
	return failed("cannot %s: %v", what, err)
}

// subject names what a Kafka error is about, for its message and hint.
type subject struct {
	kind string // "topic", "group", ...
	name string
}

// kafkaErr formats a Kafka error as "NAME (code): what went wrong; what to do".
func kafkaErr(err error, serverMsg string, what string, subj ...subject) error {
	var ke *kerr.Error
	if !errors.As(err, &ke) {
		return failed("cannot %s: %v", what, err)
	}
	var s subject
	if len(subj) > 0 {
		s = subj[0]
	}
	detail, hint := "", ""
	switch ke.Code {
	case kerr.UnknownTopicOrPartition.Code, kerr.UnknownTopicID.Code:
		if s.kind == "topic" {
			detail = fmt.Sprintf("topic %q does not exist", s.name)
		}
		hint = "list topics with `ringctl topic list`"
	case kerr.TopicAlreadyExists.Code:
		detail = fmt.Sprintf("topic %q already exists", s.name)
		hint = fmt.Sprintf("see it with `ringctl topic describe %s`", s.name)
	case kerr.GroupIDNotFound.Code:
		detail = fmt.Sprintf("group %q does not exist", s.name)
		hint = "list groups with `ringctl group list`"
	case kerr.NonEmptyGroup.Code:
		detail = fmt.Sprintf("group %q still has members", s.name)
		hint = "stop its consumers first"
	case kerr.InvalidReplicationFactor.Code:
		hint = "this cluster has one broker per replica: use --replication-factor 1 (see `ringctl broker list`)"
	case kerr.InvalidPartitions.Code:
		hint = "give a positive count on create, and a larger total than the current one on add-partitions (see `ringctl topic describe`)"
	case kerr.InvalidConfig.Code:
		hint = "check the config name and value; current values: `ringctl topic describe NAME`"
	case kerr.TopicDeletionDisabled.Code:
		hint = "set delete.topic.enable=true on the broker"
	case kerr.InvalidTopicException.Code:
		if !strings.Contains(serverMsg, "internal topic") {
			hint = "topic names use [a-zA-Z0-9._-], at most 249 characters, and not . or .."
		}
	case kerr.UnsupportedVersion.Code:
		hint = "the broker does not support this request version"
	case kerr.CoordinatorNotAvailable.Code, kerr.CoordinatorLoadInProgress.Code, kerr.NotCoordinator.Code:
		hint = "the group coordinator is not ready; retry in a moment"
	case kerr.UnknownMemberID.Code, kerr.RebalanceInProgress.Code:
		hint = "the group has active members: stop its consumers first"
	case kerr.KafkaStorageError.Code:
		hint = "the partition is offline after a disk error: check the broker's log"
	case kerr.RequestTimedOut.Code:
		hint = "retry, or raise --timeout"
	case kerr.PolicyViolation.Code, kerr.ClusterAuthorizationFailed.Code, kerr.TopicAuthorizationFailed.Code, kerr.GroupAuthorizationFailed.Code:
		hint = "the broker refused the operation"
	}
	// Some clients prefix the server's message with the error's name and description.
	serverMsg = strings.TrimPrefix(serverMsg, ke.Message+": "+ke.Description+": ")
	if serverMsg != "" && detail == "" {
		detail = serverMsg
	}
	if detail == "" {
		detail = ke.Description
	}
	msg := fmt.Sprintf("%s (%d): cannot %s: %s", ke.Message, ke.Code, what, detail)
	if hint != "" {
		msg += "; " + hint
	}
	return &exitError{code: exitFailed, msg: msg}
}

// errs collects per-resource failures; the command still prints what
// succeeded and then fails with all of them.
type errs []error

func (es errs) err() error {
	switch len(es) {
	case 0:
		return nil
	case 1:
		return es[0]
	}
	msgs := make([]string, len(es))
	for i, e := range es {
		msgs[i] = e.Error()
	}
	return &exitError{code: exitFailed, msg: strings.Join(msgs, "\nringctl: ")}
}

// printJSON writes v as indented JSON.
func (e *env) printJSON(v any) error {
	enc := json.NewEncoder(e.out)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return failed("cannot write JSON: %v", err)
	}
	return nil
}

// table writes aligned columns.
type table struct{ tw *tabwriter.Writer }

func (e *env) table(header ...string) *table {
	t := &table{tw: tabwriter.NewWriter(e.out, 0, 4, 2, ' ', 0)}
	t.row(anySlice(header)...)
	return t
}

func anySlice(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

func (t *table) row(cols ...any) {
	for i, c := range cols {
		if i > 0 {
			fmt.Fprint(t.tw, "\t")
		}
		fmt.Fprint(t.tw, c)
	}
	fmt.Fprintln(t.tw)
}

func (t *table) flush() { t.tw.Flush() }

func errString(err error) string {
	if err == nil {
		return ""
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Message
	}
	return err.Error()
}

func int32List(xs []int32) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, ",")
}
