//go:build !noui

package main

import (
	"log/slog"

	uiserver "github.com/temporalio/ui-server/v2/server"
	uiconfig "github.com/temporalio/ui-server/v2/server/config"
	uiserveroptions "github.com/temporalio/ui-server/v2/server/server_options"
)

// startUI starts the Web UI as the CLI does (devserver.buildUIServer; MIT licence, see server.go).
func startUI(o uiOptions, logger *slog.Logger) (func(), error) {
	ui := uiserver.NewServer(uiserveroptions.WithConfigProvider(&uiconfig.Config{
		Host:                maybeEscapeIPv6(o.ip),
		Port:                o.port,
		TemporalGRPCAddress: o.frontend,
		EnableUI:            true,
		CORS:                uiconfig.CORS{CookieInsecure: true},
		HideLogs:            true,
	}))
	go func() {
		if err := ui.Start(); err != nil {
			logger.Error("failed running UI server", "error", err)
			panic(err)
		}
	}()
	return ui.Stop, nil
}
