package main

import (
	"context"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/grove-dev/grove/auth"
	"github.com/spf13/cobra"
)

// keysCmd manages the server's API keys. It opens the store directly: keys
// are an operator's business on the server's machine, never done remotely.
func (c *cli) keysCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "keys", Short: "Manage HTTP API keys (stored hashed; the secret is shown once)"}
	var user string
	var admin bool
	create := &cobra.Command{
		Use:   "create --user USER [--admin]",
		Short: "Create a key for a user and print its secret once",
		Args:  cobra.NoArgs,
		RunE: c.withKeys(func(ctx context.Context, k *auth.Keys, _ []string) error {
			rec, secret, err := k.Create(ctx, user, admin)
			if err != nil {
				return err
			}
			if c.cfg.JSON {
				return c.printJSON(map[string]any{"id": rec.ID, "user": rec.User, "admin": rec.Admin, "key": secret})
			}
			fmt.Fprintf(c.stderr, "key %s for user %s%s; store the secret now, it is not shown again:\n", rec.ID, rec.User, map[bool]string{true: " (admin)"}[rec.Admin])
			fmt.Fprintln(c.stdout, secret)
			return nil
		}),
	}
	create.Flags().StringVar(&user, "user", "", "the user the key acts as (required)")
	create.Flags().BoolVar(&admin, "admin", false, "operator key: sees every user's workspaces")
	_ = create.MarkFlagRequired("user")

	list := &cobra.Command{
		Use:   "list",
		Short: "List keys (never their secrets)",
		Args:  cobra.NoArgs,
		RunE: c.withKeys(func(ctx context.Context, k *auth.Keys, _ []string) error {
			keys, err := k.List(ctx)
			if err != nil {
				return err
			}
			type row struct {
				ID        string    `json:"id"`
				User      string    `json:"user"`
				Admin     bool      `json:"admin"`
				CreatedAt time.Time `json:"created_at"`
				RevokedAt time.Time `json:"revoked_at,omitzero"`
			}
			rows := make([]row, 0, len(keys))
			for _, r := range keys {
				rows = append(rows, row{r.ID, r.User, r.Admin, r.CreatedAt, r.RevokedAt})
			}
			if c.cfg.JSON {
				return c.printJSON(rows)
			}
			tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tUSER\tADMIN\tCREATED\tREVOKED")
			for _, r := range rows {
				revoked := "-"
				if !r.RevokedAt.IsZero() {
					revoked = r.RevokedAt.Format("2006-01-02 15:04")
				}
				fmt.Fprintf(tw, "%s\t%s\t%v\t%s\t%s\n", r.ID, r.User, r.Admin, r.CreatedAt.Format("2006-01-02 15:04"), revoked)
			}
			return tw.Flush()
		}),
	}
	revoke := &cobra.Command{
		Use:   "revoke ID",
		Short: "Revoke a key; requests with it fail from now on",
		Args:  cobra.ExactArgs(1),
		RunE: c.withKeys(func(ctx context.Context, k *auth.Keys, args []string) error {
			if err := k.Revoke(ctx, args[0]); err != nil {
				return err
			}
			fmt.Fprintf(c.stderr, "revoked %s\n", args[0])
			return nil
		}),
	}
	cmd.AddCommand(create, list, revoke)
	return cmd
}

func (c *cli) withKeys(fn func(ctx context.Context, k *auth.Keys, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		st, err := openStore(cmd.Context(), c.cfg)
		if err != nil {
			return fmt.Errorf("open store: %w", err)
		}
		defer st.Close()
		return fn(cmd.Context(), &auth.Keys{Store: st}, args)
	}
}
