// Package natsauth holds what package natsjobs and package embedded both
// need and neither may take from the other (natsjobs must not link
// nats-server; embedded must not import natsjobs, whose own tests import
// it): the ErrInvalid sentinel and the checks of a client's credentials.
package natsauth

import (
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"
)

// ErrInvalid is natsjobs.ErrInvalid: every error about bad input wraps it.
var ErrInvalid = errors.New("natsjobs: invalid argument")

// Invalidf returns an error wrapping ErrInvalid.
func Invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, args...)...)
}

// Creds are a client's credentials: at most one of Token, User with
// Password, NKeySeed.
type Creds struct {
	Token, User, Password, NKeySeed string
}

// Set reports whether any credential is given.
func (c Creds) Set() bool {
	return c.Token != "" || c.User != "" || c.Password != "" || c.NKeySeed != ""
}

// Check validates c; where ("Config", "embedded.Server") prefixes its
// errors, which wrap ErrInvalid.
func (c Creds) Check(where string) error {
	kinds := 0
	for _, set := range []bool{c.Token != "", c.User != "" || c.Password != "", c.NKeySeed != ""} {
		if set {
			kinds++
		}
	}
	switch {
	case kinds > 1:
		return Invalidf("%s: give one of Token, User and Password, NKeySeed", where)
	case (c.User == "") != (c.Password == ""):
		return Invalidf("%s: User and Password go together", where)
	}
	if c.NKeySeed != "" {
		if _, _, err := NKeyUser(c.NKeySeed); err != nil {
			return Invalidf("%s.NKeySeed: %v", where, err)
		}
	}
	return nil
}

// NKeyUser parses a user seed ("SU...") and returns its key pair and
// public key.
func NKeyUser(seed string) (nkeys.KeyPair, string, error) {
	kp, err := nkeys.FromSeed([]byte(seed))
	if err != nil {
		return nil, "", err
	}
	pub, err := kp.PublicKey()
	if err != nil || !nkeys.IsValidPublicUserKey(pub) {
		return nil, "", errors.New("not a user seed (SU...)")
	}
	return kp, pub, nil
}

// ClientOptions are the client options that present c (none if c is
// empty). c must have passed Check.
func (c Creds) ClientOptions() []nats.Option {
	switch {
	case c.Token != "":
		return []nats.Option{nats.Token(c.Token)}
	case c.User != "":
		return []nats.Option{nats.UserInfo(c.User, c.Password)}
	case c.NKeySeed != "":
		kp, pub, _ := NKeyUser(c.NKeySeed) // checked
		return []nats.Option{nats.Nkey(pub, kp.Sign)}
	}
	return nil
}
