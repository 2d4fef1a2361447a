package cli

import (
	"errors"

	"github.com/spf13/cobra"
)

func newCheckCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "check",
		Short: "Prove one consumer group against a live Kafka cluster",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return exitError{code: ExitFailure, err: errors.New("check: not implemented yet (issue 3)")}
		},
	}
	return cmd
}
