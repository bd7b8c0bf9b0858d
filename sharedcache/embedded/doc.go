// Package embedded runs nats-server inside a sharedcache process, the
// store of a cache whose instances need nothing else installed:
//
//	store, err := sharedcache.NATS(sharedcache.NATSConfig{
//		Server: embedded.Server{Listen: "10.0.0.5:4222", StoreDir: "/var/lib/shop/cache"},
//	})
//	...
//	defer store.Close() // stops the server
//
// NATS starts the server and connects to it in memory; Close stops it.
// Server.Listen opens a port for the other instances, which connect with
// sharedcache.NATSConfig{URL: store.ClientURL()} and need not import this
// package.
//
// # Why a package of its own
//
// nats-server is most of a program that links it: a URL-only instance
// (sharedcache/examples/client) was 18.3 MB stripped when package
// sharedcache started the server itself, and is 7.5 MB now that the
// server is here. TestURLClientLinksNoServer in package sharedcache keeps
// it so. Package embedded does not import sharedcache (whose own tests
// start servers with it); the one-method interface sharedcache.NATSServer
// is all they share, the same as natsjobs' Config.Server.
//
// How it is built, and why: doc/design/sharedcache.md.
package embedded
