package cli

import (
	"context"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/spool-run/spool/internal/assembly"
	"github.com/spool-run/spool/internal/config"
	"github.com/spool-run/spool/internal/setting"
)

func newServerCmd(e *env) *cobra.Command {
	var cfg serverConfig
	cmd := &cobra.Command{
		Use:   "server",
		Short: "Run the spool server (API, storage, live output)",
		Long: `Run the spool server. With no configuration it keeps everything in an
embedded SQLite database under --data-dir and listens on loopback only.

Settings come from, lowest first: defaults, the --config YAML file, the
environment (SPOOL_ + the setting's path, for example
SPOOL_EXECUTION_BATCHING_MAX_BATCH_SIZE=100), and the flags below.

Environment overrides:
  ` + strings.Join(config.EnvNames(), "\n  ") + `

SIGTERM or Ctrl-C stops it gracefully; a second one stops it at once.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg.given = givenFlags(cmd)
			return runServer(cmd.Context(), cfg, e)
		},
	}
	cmd.Flags().StringVar(&cfg.configPath, "config", "", "YAML configuration file")
	cmd.Flags().StringVar(&cfg.addr, "addr", config.Default().Server.Addr, "address to listen on (host:port)")
	cmd.Flags().StringVar(&cfg.dataDir, "data-dir", config.Default().Server.DataDir, "directory for the database and the token key")
	return cmd
}

// serverConfig is what `spool server` is told on its command line.
type serverConfig struct {
	configPath, addr, dataDir string
	given                     map[string]bool // the flags given
}

func runServer(ctx context.Context, cfg serverConfig, e *env) error {
	conf, err := config.Load(cfg.configPath, os.LookupEnv)
	if err != nil {
		return setting.Rename(err, serverSettingName(cfg, nil))
	}
	if cfg.given["addr"] {
		conf.Server.Addr = cfg.addr
	}
	if cfg.given["data-dir"] {
		conf.Server.DataDir = cfg.dataDir
	}
	if err := conf.Validate(); err != nil {
		return err
	}
	log := conf.Log.NewLogger(e.errOut)
	for _, w := range append(conf.Warnings, config.UnknownEnv(os.Environ())...) {
		log.Warn(w)
	}
	assembly.TuneGC()
	r, err := assembly.Start(ctx, conf, assembly.Options{Log: log})
	if err != nil {
		return setting.Rename(err, serverSettingName(cfg, conf))
	}
	log.Info("spool server listening", "url", r.URL(), "store", conf.Store.Type, "data_dir", conf.Server.DataDir)
	return r.Wait()
}

// serverSettingName names a setting of `spool server` the way the person
// gave it: by its flag, its environment variable, or the configuration
// file. A setting left at its default is named by its flag, if it has one:
// that is how to change it.
func serverSettingName(given serverConfig, cfg *config.Config) func(string) string {
	def := config.Default()
	flags := map[string]string{"config": "--config", "server.addr": "--addr", "server.data_dir": "--data-dir"}
	inFile := map[string]bool{}
	if cfg != nil {
		inFile["server.addr"] = cfg.Server.Addr != def.Server.Addr
		inFile["server.data_dir"] = cfg.Server.DataDir != def.Server.DataDir
	}
	return func(name string) string {
		flag, hasFlag := flags[name]
		// Settings have dotted paths; "config" is only ever a flag.
		env := config.EnvName(strings.Split(name, ".")...)
		_, inEnv := os.LookupEnv(env)
		inEnv = inEnv && strings.Contains(name, ".")
		switch {
		case hasFlag && given.given[strings.TrimPrefix(flag, "--")]:
			return flag
		case inEnv:
			return env
		case given.configPath != "" && (inFile[name] || !hasFlag):
			return name + " (in " + given.configPath + ")"
		case hasFlag:
			return flag
		}
		return name
	}
}
