// Command temporal-dev is the project's Temporal development server: `temporal server start-dev` of the Temporal CLI
// v1.5.1 without the rest of the CLI (its command tree, its SDK client commands), so that a first start builds less
// (issue 42 point 6; docs/development.md "First start"). It takes the CLI's command line, the subset of it that
// scripts/servers/launch.ts passes, so that a real `temporal` binary (TEMPORAL_CLI_PATH, or on PATH) still drops in:
//
//	temporal-dev server start-dev --ip 127.0.0.1 --port 7233 --db-filename f.db --namespace ns --log-level warn \
//	  --sqlite-pragma journal_mode=wal --dynamic-config-value key=<json> --search-attribute Name=Keyword \
//	  (--headless | --ui-port 8233)
//
// The server's configuration is the CLI's (server.go, copied from its devserver package under the MIT licence), as
// are the defaults below; the dependency versions are those of the CLI v1.5.1's go.mod.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/google/uuid"
	"go.temporal.io/api/enums/v1"
)

// defaultDynamicConfigValues are the CLI's own (temporalcli/commands.server.go), applied unless a flag sets the key.
var defaultDynamicConfigValues = map[string]any{
	"system.forceSearchAttributesCacheRefreshOnRead": true,
	"frontend.persistenceMaxQPS":                     10000,
	"history.persistenceMaxQPS":                      45000,
}

// repeated is a flag given any number of times.
type repeated []string

func (r *repeated) String() string     { return strings.Join(*r, ",") }
func (r *repeated) Set(v string) error { *r = append(*r, v); return nil }

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintf(os.Stderr, "temporal-dev: %v\n", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) < 2 || args[0] != "server" || args[1] != "start-dev" {
		return errors.New("usage: temporal-dev server start-dev [flags] (the Temporal CLI's command line)")
	}
	fs := flag.NewFlagSet("server start-dev", flag.ContinueOnError)
	ip := fs.String("ip", "127.0.0.1", "IP address the frontend and the other services listen on")
	port := fs.Int("port", 7233, "frontend gRPC port")
	httpPort := fs.Int("http-port", 0, "frontend HTTP port (default: a free port)")
	metricsPort := fs.Int("metrics-port", 0, "Prometheus metrics port (default: none)")
	dbFile := fs.String("db-filename", "", "SQLite database file (default: in memory)")
	logLevel := fs.String("log-level", "warn", "debug, info, warn, error or never")
	headless := fs.Bool("headless", false, "no Web UI")
	uiPort := fs.Int("ui-port", 0, "Web UI port (default: --port + 1000)")
	var namespaces, pragmas, dynamic, searchAttrs repeated
	fs.Var(&namespaces, "namespace", "namespace to create besides default (repeatable)")
	fs.Var(&pragmas, "sqlite-pragma", "SQLite pragma, name=value (repeatable)")
	fs.Var(&dynamic, "dynamic-config-value", "dynamic config value, key=<JSON> (repeatable)")
	fs.Var(&searchAttrs, "search-attribute", "search attribute, Name=Type (repeatable)")
	if err := fs.Parse(args[2:]); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	if *ip == "localhost" {
		*ip = localhost
	}

	opts := startOptions{
		FrontendIP:             *ip,
		FrontendPort:           *port,
		FrontendHTTPPort:       *httpPort,
		MetricsPort:            *metricsPort,
		DatabaseFile:           *dbFile,
		Namespaces:             []string{"default"},
		ClusterID:              uuid.NewString(),
		MasterClusterName:      "active",
		CurrentClusterName:     "active",
		InitialFailoverVersion: 1,
	}
	for _, ns := range namespaces {
		if ns != "default" {
			opts.Namespaces = append(opts.Namespaces, ns)
		}
	}

	if *logLevel == "never" {
		opts.LogLevel = 100
		opts.Logger = slog.New(slog.NewTextHandler(discard{}, nil))
	} else {
		if err := opts.LogLevel.UnmarshalText([]byte(*logLevel)); err != nil {
			return fmt.Errorf("invalid log level %q: %w", *logLevel, err)
		}
		opts.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: opts.LogLevel}))
	}

	var err error
	if opts.SqlitePragmas, err = keyValues(pragmas); err != nil {
		return fmt.Errorf("invalid pragma: %w", err)
	}
	if opts.DynamicConfigValues, err = dynamicValues(dynamic); err != nil {
		return fmt.Errorf("invalid dynamic config values: %w", err)
	}
	if opts.SearchAttributes, err = searchAttributes(searchAttrs); err != nil {
		return err
	}

	if err := checkPortFree(opts.FrontendIP, opts.FrontendPort); err != nil {
		return fmt.Errorf("can't set frontend port %d: %w", opts.FrontendPort, err)
	}
	ui := uiOptions{}
	if !*headless {
		ui.port = *uiPort
		if ui.port == 0 {
			ui.port = min(opts.FrontendPort+1000, 65535)
		}
		if err := checkPortFree(opts.FrontendIP, ui.port); err != nil {
			return fmt.Errorf("can't set UI port %d: %w", ui.port, err)
		}
		ui.ip, ui.frontend = opts.FrontendIP, fmt.Sprintf("%v:%v", maybeEscapeIPv6(opts.FrontendIP), opts.FrontendPort)
	}

	server, err := startServer(opts)
	if err != nil {
		return fmt.Errorf("failed starting server: %w", err)
	}
	stopUI := func() {}
	if !*headless {
		if stopUI, err = startUI(ui, opts.Logger); err != nil {
			server.Stop()
			return err
		}
	}

	fmt.Printf("%-8s %v:%v\n", "Server:", opts.FrontendIP, opts.FrontendPort)
	if !*headless {
		fmt.Printf("%-8s http://%v:%v\n", "UI:", ui.ip, ui.port)
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	<-sig
	fmt.Println("Stopping server...")
	stopUI()
	server.Stop()
	return nil
}

// uiOptions: where the Web UI listens and the frontend it talks to.
type uiOptions struct {
	ip       string
	port     int
	frontend string
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

func keyValues(items []string) (map[string]string, error) {
	ret := make(map[string]string, len(items))
	for _, item := range items {
		k, v, ok := strings.Cut(item, "=")
		if !ok {
			return nil, fmt.Errorf("missing expected '=' in %q", item)
		}
		ret[k] = v
	}
	return ret, nil
}

// dynamicValues parses key=<JSON> items as the CLI does: a JSON number becomes an int when it is one (the server's
// dynamic config takes int, not int64 nor float64, for integer settings), then the CLI's defaults are added.
func dynamicValues(items []string) (map[string]any, error) {
	ret := make(map[string]any, len(items)+len(defaultDynamicConfigValues))
	for _, item := range items {
		k, raw, ok := strings.Cut(item, "=")
		if !ok {
			return nil, fmt.Errorf("missing expected '=' in %q", item)
		}
		dec := json.NewDecoder(strings.NewReader(raw))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("invalid JSON value for key %q: %w", k, err)
		} else if dec.InputOffset() != int64(len(raw)) {
			return nil, fmt.Errorf("invalid JSON value for key %q: unexpected trailing data", k)
		}
		if num, ok := v.(json.Number); ok {
			if i, err := num.Int64(); err == nil {
				v = int(i)
			} else if f, err := num.Float64(); err == nil {
				v = f
			} else {
				return nil, fmt.Errorf("invalid JSON value for key %q", k)
			}
		}
		ret[k] = v
	}
	for k, v := range defaultDynamicConfigValues {
		if _, ok := ret[k]; !ok {
			ret[k] = v
		}
	}
	return ret, nil
}

// searchAttributes parses Name=Type items (type names case-insensitive, as in the CLI).
func searchAttributes(items []string) (map[string]enums.IndexedValueType, error) {
	kv, err := keyValues(items)
	if err != nil {
		return nil, fmt.Errorf("invalid search attributes: %w", err)
	}
	attrs := make(map[string]enums.IndexedValueType, len(kv))
	for k, v := range kv {
		var valType enums.IndexedValueType
		for name, ord := range enums.IndexedValueType_shorthandValue {
			if strings.EqualFold(v, name) {
				valType = enums.IndexedValueType(ord)
				break
			}
		}
		if valType == 0 {
			return nil, fmt.Errorf("invalid search attribute value type %q", v)
		}
		attrs[k] = valType
	}
	return attrs, nil
}
