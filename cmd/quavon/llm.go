package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/spf13/cobra"

	"github.com/quavon/quavon/internal/config"
	"github.com/quavon/quavon/internal/llm"
	"github.com/quavon/quavon/internal/llm/provider"
)

type llmProbeOptions struct {
	env     *env
	Feature string
	Timeout time.Duration
}

func newLLMCmd(e *env, runF func(context.Context, *llmProbeOptions) error) *cobra.Command {
	if runF == nil {
		runF = runLLMProbe
	}
	cmd := &cobra.Command{Use: "llm", Short: "The configured model", Args: cobra.ArbitraryArgs, RunE: groupRunE}
	o := &llmProbeOptions{env: e}
	probe := &cobra.Command{
		Use:   "probe [--feature review|acceptance|fix]",
		Short: "Check that the configured model answers and really calls tools",
		Long: `Send the feature's model (QUAVON_LLM_* settings) one tiny request offering one tool
and check the answer is a well-formed call of exactly that tool. Local models that
claim tool support and answer in prose fail it: the usual failure of self-hosted
models in agents. Prints the model, latency, tokens and cost.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runF(cmd.Context(), o) },
	}
	probe.Flags().StringVar(&o.Feature, "feature", "review", "the `feature` whose model to probe: review, acceptance or fix")
	probe.Flags().DurationVar(&o.Timeout, "timeout", 2*time.Minute, "give up after this long")
	cmd.AddCommand(probe)
	return cmd
}

func runLLMProbe(ctx context.Context, o *llmProbeOptions) error {
	cfg, err := config.LoadLLM(o.env.environ)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(o.env.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	for _, w := range cfg.Warnings {
		log.Warn(w)
	}
	m, err := provider.FromConfig(cfg.LLM, llm.Feature(o.Feature), log)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	res, err := llm.Probe(ctx, m)
	if err != nil {
		return fmt.Errorf("the %s model failed the probe: %w", o.Feature, err)
	}
	_, err = fmt.Fprintf(o.env.stdout, "ok: %s called the tool in %s (%d input, %d output tokens, $%.6f)\n",
		res.Model, res.Latency.Round(time.Millisecond), res.Usage.InputTokens, res.Usage.OutputTokens, float64(res.Cost)/1e6)
	return err
}
