// Package embedded runs nats-server inside a natsjobs process: the
// default way to deploy natsjobs, one binary with nothing to install.
//
//	c, err := natsjobs.Open(ctx, natsjobs.Config{
//		Server: embedded.Server{StoreDir: "/var/lib/shop/jobs"},
//		Queues: []string{"orders"},
//	})
//	...
//	defer c.Close() // stops the server after flushing its store
//
// Open starts the server, connects to it in memory (no port is opened)
// and Close stops it. Server.Listen opens a port for other processes,
// more workers that connect with natsjobs.Config{URL: c.URL()}; a port
// beyond loopback requires credentials (Token, User and Password, or
// NKeySeed) of every client, this process's in-memory connection
// included, and Server.TLS adds TLS to it.
//
// # Why a package of its own
//
// nats-server is most of a natsjobs binary: a worker that connects by
// URL (examples/worker) was 17.9 MB stripped when package natsjobs
// linked the server, and is 7.2 MB now that it imports natsjobs only. A
// test in package natsjobs (TestURLWorkerLinksNoServer) keeps it so.
//
// The server is an explicit Config field, not registered by a blank
// import as database/sql drivers are: the first program reads the same
// (one import, one field), a program that forgot it fails at compile
// time rather than at Open, and no library's blank import can drag the
// server into a worker unseen. Package
// embedded does not import natsjobs (natsjobs' own tests start servers
// with it); the one-method interface natsjobs.Server is all they share.
//
// How it is built, and why: doc/design/natsjobs.md.
package embedded
