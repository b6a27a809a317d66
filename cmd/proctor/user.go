package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"strings"
	"text/tabwriter"

	"proctor/models"
)

// user manages accounts from the command line: `user create` bootstraps admins.
func (p *Program) user(ctx context.Context, args []string) error {
	if len(args) == 0 {
		return usagef("expected a subcommand: create or list")
	}
	switch args[0] {
	case "create":
		return p.userCreate(ctx, args[1:])
	case "list":
		return p.userList(ctx, args[1:])
	}
	return usagef("unknown subcommand %q: expected create or list", args[0])
}

func (p *Program) userCreate(ctx context.Context, args []string) error {
	fs, cf := p.newFlagSet("user create")
	admin := fs.Bool("admin", false, "make the user an administrator")
	name := fs.String("name", "", "display name")
	fromStdin := fs.Bool("password-stdin", false, "read the password from the first line of standard input instead of generating one")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usagef("expected exactly one EMAIL argument, got %d", fs.NArg())
	}
	email := fs.Arg(0)
	password, generated := "", false
	if *fromStdin {
		line, err := bufio.NewReader(p.Stdin).ReadString('\n')
		if err != nil && line == "" {
			return usagef("--password-stdin: no password on standard input")
		}
		password = strings.TrimRight(line, "\r\n")
	} else {
		b := make([]byte, 18)
		if _, err := rand.Read(b); err != nil {
			return err
		}
		password, generated = base64.RawURLEncoding.EncodeToString(b), true
	}
	app, err := p.openApp(ctx, cf, true)
	if err != nil {
		return err
	}
	defer app.Close()
	u, err := app.DB.CreateUser(ctx, email, *name, password, *admin)
	if err != nil {
		return err
	}
	role := "user"
	if u.IsAdmin {
		role = "admin"
	}
	fmt.Fprintf(p.Stdout, "created %s %s (id %d)\n", role, u.Email, u.ID)
	if generated {
		fmt.Fprintf(p.Stdout, "one-time password: %s\n", password)
		fmt.Fprintln(p.Stdout, "It is shown only now; sign in and keep it safe.")
	}
	return nil
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
	users, err := app.DB.ListUsers(models.WithActor(ctx, models.SystemActor()))
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
