package cli

import (
	"errors"

	"github.com/spf13/cobra"
)

func newManagerCommand() *cobra.Command {
	var logs logOptions
	cmd := &cobra.Command{
		Use:   "manager",
		Short: "Run the controller and the admission webhook",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return exitError{code: ExitFailure, err: errors.New("manager: not implemented yet (issue 4: the reconciler)")}
		},
	}
	logs.bind(cmd.Flags())
	return cmd
}
