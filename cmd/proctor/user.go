package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/base64"
	"flag"
	"fmt"
	"strings"
	"text/tabwriter"

	"proctor/models"
)

// user manages accounts from the command line: `user create` bootstraps admins,
// `user set-password` lets an operator back into an account.
func (p *Program) user(ctx context.Context, args []string) error {
	if len(args) == 0 {
		return usagef("expected a subcommand: create, set-password or list")
	}
	switch args[0] {
	case "create":
		return p.userCreate(ctx, args[1:])
	case "set-password":
		return p.userSetPassword(ctx, args[1:])
	case "list":
		return p.userList(ctx, args[1:])
	}
	return usagef("unknown subcommand %q: expected create, set-password or list", args[0])
}

func (p *Program) userCreate(ctx context.Context, args []string) error {
	fs, cf := p.newFlagSet("user create")
	admin := fs.Bool("admin", false, "make the user an administrator")
	name := fs.String("name", "", "display name")
	return p.passwordVerb(ctx, fs, cf, args, "created", func(ctx context.Context, app *App, email, password string) (*models.User, error) {
		return app.accountService().CreateUser(ctx, email, *name, password, *admin)
	})
}

// userSetPassword replaces the password of an existing account (and with
// --admin also promotes it), for an operator locked out of the web UI.
func (p *Program) userSetPassword(ctx context.Context, args []string) error {
	fs, cf := p.newFlagSet("user set-password")
	admin := fs.Bool("admin", false, "also make the user an administrator")
	return p.passwordVerb(ctx, fs, cf, args, "set the password of", func(ctx context.Context, app *App, email, password string) (*models.User, error) {
		return app.accountService().SetUserPassword(ctx, email, password, *admin)
	})
}

// passwordVerb runs a user verb that takes one EMAIL and gives it a password:
// it adds --password-stdin to fs, parses args, reads or generates the password,
// opens the app, calls apply as the system actor, and says what was done to whom (done) with the
// generated password, shown only this once.
func (p *Program) passwordVerb(ctx context.Context, fs *flag.FlagSet, cf *commonFlags, args []string, done string,
	apply func(ctx context.Context, app *App, email, password string) (*models.User, error)) error {
	fromStdin := fs.Bool("password-stdin", false, "read the password from the first line of standard input instead of generating one")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usagef("expected exactly one EMAIL argument, got %d", fs.NArg())
	}
	password, generated, err := p.newPassword(*fromStdin)
	if err != nil {
		return err
	}
	app, err := p.openApp(ctx, cf, true)
	if err != nil {
		return err
	}
	defer app.Close()
	ctx = models.WithActor(ctx, models.SystemActor())
	u, err := apply(ctx, app, fs.Arg(0), password)
	if err != nil {
		return err
	}
	if generated {
		// A password printed on a terminal is for one sign-in only.
		if err := app.accountService().ExpirePassword(ctx, u.ID); err != nil {
			return err
		}
	}
	role := "user"
	if u.IsAdmin {
		role = "admin"
	}
	fmt.Fprintf(p.Stdout, "%s %s %s (id %d)\n", done, role, u.Email, u.ID)
	if generated {
		fmt.Fprintf(p.Stdout, "one-time password: %s\n", password)
		fmt.Fprintln(p.Stdout, "It is shown only now and works for one sign-in: the account must choose its own password then.")
	}
	return nil
}

// newPassword reads the password from the first line of standard input when
// fromStdin is set, and generates a random one (generated true) otherwise.
func (p *Program) newPassword(fromStdin bool) (password string, generated bool, err error) {
	if fromStdin {
		line, err := bufio.NewReader(p.Stdin).ReadString('\n')
		if err != nil && line == "" {
			return "", false, usagef("--password-stdin: no password on standard input")
		}
		return strings.TrimRight(line, "\r\n"), false, nil
	}
	b := make([]byte, 18)
	if _, err := rand.Read(b); err != nil {
		return "", false, err
	}
	return base64.RawURLEncoding.EncodeToString(b), true, nil
}

func (p *Program) userList(ctx context.Context, args []string) error {
	fs, cf := p.newFlagSet("user list")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	app, err := p.openApp(ctx, cf, true)
	if err != nil {
		return err
	}
	defer app.Close()
	users, err := app.accountService().ListUsers(models.WithActor(ctx, models.SystemActor()))
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(p.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tEMAIL\tNAME\tADMIN\tCREATED")
	for _, u := range users {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%t\t%s\n", u.ID, u.Email, u.Name, u.IsAdmin, u.CreatedAt.Format("2006-01-02"))
	}
	return tw.Flush()
}
