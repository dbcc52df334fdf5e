//go:build noui

package main

import (
	"errors"
	"log/slog"
)

func startUI(uiOptions, *slog.Logger) (func(), error) {
	return nil, errors.New("built without the Web UI: run with --headless, or build without -tags noui")
}
