// This file is copied, trimmed, from the Temporal CLI v1.5.1 (github.com/temporalio/cli,
// temporalcli/devserver/server.go, log.go and freeport.go), under its MIT licence:
//
// The MIT License
//
// Copyright (c) 2022 Temporal Technologies Inc.  All rights reserved.
//
// Copyright (c) 2020 Uber Technologies, Inc.
//
// Copyright (c) 2021 Datadog, Inc.
//
// Permission is hereby granted, free of charge, to any person obtaining a copy
// of this software and associated documentation files (the "Software"), to deal
// in the Software without restriction, including without limitation the rights
// to use, copy, modify, merge, publish, distribute, sublicense, and/or sell
// copies of the Software, and to permit persons to whom the Software is
// furnished to do so, subject to the following conditions:
//
// The above copyright notice and this permission notice shall be included in
// all copies or substantial portions of the Software.
//
// THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
// IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
// FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
// AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
// LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
// OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN
// THE SOFTWARE.
//
// What changed: no Web UI server (its package is not imported), no pprof, no gRPC interceptors, no config logging;
// the rest (the server's configuration, dynamic config, SQLite schema and namespaces) is the CLI's.

package main

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/server/common/authorization"
	"go.temporal.io/server/common/cluster"
	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/dynamicconfig"
	"go.temporal.io/server/common/log/tag"
	"go.temporal.io/server/common/membership/static"
	"go.temporal.io/server/common/metrics"
	sqliteplugin "go.temporal.io/server/common/persistence/sql/sqlplugin/sqlite"
	"go.temporal.io/server/common/primitives"
	"go.temporal.io/server/components/callbacks"
	"go.temporal.io/server/components/nexusoperations"
	sqliteschema "go.temporal.io/server/schema/sqlite"
	"go.temporal.io/server/temporal"
)

const localhost = "127.0.0.1"

type startOptions struct {
	FrontendIP             string
	FrontendPort           int
	Namespaces             []string
	ClusterID              string
	MasterClusterName      string
	CurrentClusterName     string
	InitialFailoverVersion int
	Logger                 *slog.Logger
	LogLevel               slog.Level

	DatabaseFile        string
	MetricsPort         int
	SqlitePragmas       map[string]string
	FrontendHTTPPort    int
	DynamicConfigValues map[string]any
	SearchAttributes    map[string]enums.IndexedValueType
}

func startServer(s startOptions) (temporal.Server, error) {
	if s.FrontendHTTPPort == 0 {
		s.FrontendHTTPPort = mustGetFreePort(s.FrontendIP)
	}
	conf, err := s.buildServerConfig()
	if err != nil {
		return nil, err
	}
	logger := slogLogger{log: s.Logger, level: s.LogLevel}
	authorizer, err := authorization.GetAuthorizerFromConfig(&conf.Global.Authorization)
	if err != nil {
		return nil, fmt.Errorf("failed creating authorizer: %w", err)
	}
	claimMapper, err := authorization.GetClaimMapperFromConfig(&conf.Global.Authorization, logger)
	if err != nil {
		return nil, fmt.Errorf("failed creating claim mapper: %w", err)
	}
	host := func(service primitives.ServiceName) static.Hosts {
		return static.SingleLocalHost(fmt.Sprintf("%v:%v", localhost, conf.Services[string(service)].RPC.GRPCPort))
	}
	opts := []temporal.ServerOption{
		temporal.WithConfig(conf),
		temporal.ForServices(temporal.DefaultServices),
		temporal.WithStaticHosts(map[primitives.ServiceName]static.Hosts{
			primitives.FrontendService: host(primitives.FrontendService),
			primitives.MatchingService: host(primitives.MatchingService),
			primitives.HistoryService:  host(primitives.HistoryService),
			primitives.WorkerService:   host(primitives.WorkerService),
		}),
		temporal.WithLogger(logger),
		temporal.WithAuthorizer(authorizer),
		temporal.WithClaimMapper(func(*config.Config) authorization.ClaimMapper { return claimMapper }),
	}

	dynConf := make(dynamicconfig.StaticClient, len(s.DynamicConfigValues)+4)
	// Setting host level mutable state cache size to 8k.
	dynConf[dynamicconfig.HistoryCacheHostLevelMaxSize.Key()] = 8096
	// Up default visibility RPS
	dynConf[dynamicconfig.FrontendMaxNamespaceVisibilityRPSPerInstance.Key()] = 100
	// NOTE that the URL scheme is fixed to HTTP since the dev server doesn't support TLS at the time of writing.
	dynConf[nexusoperations.CallbackURLTemplate.Key()] = fmt.Sprintf(
		"http://%s:%d/namespaces/{{.NamespaceName}}/nexus/callback", maybeEscapeIPv6(s.FrontendIP), s.FrontendHTTPPort)
	dynConf[callbacks.AllowedAddresses.Key()] = []struct {
		Pattern       string
		AllowInsecure bool
	}{
		{Pattern: fmt.Sprintf("%s:%d", maybeEscapeIPv6(s.FrontendIP), s.FrontendHTTPPort), AllowInsecure: true},
	}
	for k, v := range s.DynamicConfigValues {
		dynConf[dynamicconfig.Key(k)] = v
	}
	opts = append(opts, temporal.WithDynamicConfigClient(dynConf))

	server, err := temporal.NewServer(opts...)
	if err != nil {
		return nil, err
	}
	if err := server.Start(); err != nil {
		return nil, err
	}
	return server, nil
}

func (s *startOptions) buildServerConfig() (*config.Config, error) {
	var conf config.Config
	conf.Global.Membership.MaxJoinDuration = 30 * time.Second
	conf.Global.Membership.BroadcastAddress = s.FrontendIP
	if s.MetricsPort > 0 {
		conf.Global.Metrics = &metrics.Config{
			Prometheus: &metrics.PrometheusConfig{
				ListenAddress: fmt.Sprintf("%v:%v", maybeEscapeIPv6(s.FrontendIP), s.MetricsPort),
				HandlerPath:   "/metrics",
			},
		}
	}

	conf.Persistence.DefaultStore = "sqlite-default"
	conf.Persistence.VisibilityStore = "sqlite-default"
	conf.Persistence.NumHistoryShards = 1
	sqlConf, err := s.buildSQLConfig()
	if err != nil {
		return nil, err
	}
	conf.Persistence.DataStores = map[string]config.DataStore{"sqlite-default": {SQL: sqlConf}}

	conf.ClusterMetadata = &cluster.Config{
		FailoverVersionIncrement: 10,
		MasterClusterName:        s.MasterClusterName,
		CurrentClusterName:       s.CurrentClusterName,
		ClusterInformation: map[string]cluster.ClusterInformation{
			s.CurrentClusterName: {
				Enabled:                true,
				InitialFailoverVersion: int64(s.InitialFailoverVersion),
				RPCAddress:             fmt.Sprintf("%v:%v", maybeEscapeIPv6(s.FrontendIP), s.FrontendPort),
				HTTPAddress:            fmt.Sprintf("%v:%v", maybeEscapeIPv6(s.FrontendIP), s.FrontendHTTPPort),
				ClusterID:              s.ClusterID,
			},
		},
	}
	conf.DCRedirectionPolicy.Policy = "noop"
	conf.Services = map[string]config.Service{
		"frontend": s.buildServiceConfig(true),
		"history":  s.buildServiceConfig(false),
		"matching": s.buildServiceConfig(false),
		"worker":   s.buildServiceConfig(false),
	}
	conf.Archival.History.State = "disabled"
	conf.Archival.Visibility.State = "disabled"
	conf.NamespaceDefaults.Archival.History.State = "disabled"
	conf.NamespaceDefaults.Archival.Visibility.State = "disabled"
	conf.PublicClient.HostPort = fmt.Sprintf("%v:%v", maybeEscapeIPv6(s.FrontendIP), s.FrontendPort)
	return &conf, nil
}

func (s *startOptions) buildSQLConfig() (*config.SQL, error) {
	conf := config.SQL{PluginName: sqliteplugin.PluginName}
	if s.DatabaseFile == "" {
		conf.ConnectAttributes = map[string]string{"mode": "memory", "cache": "shared"}
		conf.DatabaseName = strconv.Itoa(rand.Intn(9999999))
	} else {
		conf.ConnectAttributes = map[string]string{"mode": "rwc"}
		conf.DatabaseName = s.DatabaseFile
	}
	for k, v := range s.SqlitePragmas {
		conf.ConnectAttributes[k] = v
	}

	// Apply migrations to sqlite if using file but it does not exist
	if s.DatabaseFile != "" {
		if _, err := os.Stat(s.DatabaseFile); os.IsNotExist(err) {
			if _, err := os.Stat(filepath.Dir(s.DatabaseFile)); err != nil {
				return nil, fmt.Errorf("failed checking dir for database file: %w", err)
			}
			if err := sqliteschema.SetupSchema(&conf); err != nil {
				return nil, fmt.Errorf("failed setting up schema: %w", err)
			}
		}
	}

	namespaces := make([]*sqliteschema.NamespaceConfig, len(s.Namespaces))
	for i, ns := range s.Namespaces {
		nsConfig, err := sqliteschema.NewNamespaceConfig(s.CurrentClusterName, ns, false, s.SearchAttributes)
		if err != nil {
			return nil, fmt.Errorf("failed creating namespace config: %w", err)
		}
		namespaces[i] = nsConfig
	}
	if err := sqliteschema.CreateNamespaces(&conf, namespaces...); err != nil {
		return nil, fmt.Errorf("failed creating namespaces: %w", err)
	}
	return &conf, nil
}

func (s *startOptions) buildServiceConfig(frontend bool) config.Service {
	var conf config.Service
	conf.RPC.BindOnIP = s.FrontendIP
	if frontend {
		conf.RPC.GRPCPort = s.FrontendPort
		conf.RPC.HTTPPort = s.FrontendHTTPPort
	} else {
		conf.RPC.GRPCPort = mustGetFreePort(s.FrontendIP)
	}
	return conf
}

// slogLogger is the server's log.Logger on a slog.Logger (devserver/log.go).
type slogLogger struct {
	log   *slog.Logger
	level slog.Level
}

func (s slogLogger) Debug(msg string, tags ...tag.Tag) { s.Log(slog.LevelDebug, msg, tags) }
func (s slogLogger) Info(msg string, tags ...tag.Tag)  { s.Log(slog.LevelInfo, msg, tags) }
func (s slogLogger) Warn(msg string, tags ...tag.Tag)  { s.Log(slog.LevelWarn, msg, tags) }
func (s slogLogger) Error(msg string, tags ...tag.Tag) { s.Log(slog.LevelError, msg, tags) }

// Panics and fatals are just errors
func (s slogLogger) DPanic(msg string, tags ...tag.Tag) { s.Log(slog.LevelError, msg, tags) }
func (s slogLogger) Panic(msg string, tags ...tag.Tag)  { s.Log(slog.LevelError, msg, tags) }
func (s slogLogger) Fatal(msg string, tags ...tag.Tag)  { s.Log(slog.LevelError, msg, tags) }

func (s slogLogger) SLog() *slog.Logger { return s.log }

func (s slogLogger) Log(level slog.Level, msg string, tags []tag.Tag) {
	if level >= s.level && s.log.Enabled(context.Background(), level) {
		attrs := make([]slog.Attr, len(tags))
		for i, t := range tags {
			attrs[i] = slog.Any(t.Key(), t.Value())
		}
		s.log.LogAttrs(context.Background(), level, msg, attrs...)
	}
}

// getFreePort returns a TCP port free to listen on; the connection made to it puts it in TIME_WAIT, so that the
// kernel does not hand it out again for a while (devserver/freeport.go, Linux branch).
func getFreePort(host string) (int, error) {
	l, err := net.Listen("tcp", maybeEscapeIPv6(host)+":0")
	if err != nil {
		return 0, fmt.Errorf("failed to assign a free port: %v", err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port
	r, err := net.Dial("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
	if err != nil {
		return 0, fmt.Errorf("failed to assign a free port: %v", err)
	}
	defer r.Close()
	c, err := l.Accept()
	if err != nil {
		return 0, fmt.Errorf("failed to assign a free port: %v", err)
	}
	c.Close()
	return port, nil
}

func mustGetFreePort(host string) int {
	port, err := getFreePort(host)
	if err != nil {
		panic(fmt.Errorf("failed assigning ephemeral port: %w", err))
	}
	return port
}

func checkPortFree(host string, port int) error {
	l, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
	if err != nil {
		return err
	}
	return l.Close()
}

func maybeEscapeIPv6(host string) string {
	if ip := net.ParseIP(host); ip != nil && ip.To4() == nil {
		return "[" + host + "]"
	}
	return host
}
