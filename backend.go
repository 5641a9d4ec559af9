package elector

import "github.com/leaderkit/elector/backend"

// Backend stores elections: what a driver's constructor returns
// (redlock.New, etcd.New, zookeeper.New, memory.New) and [New] takes. It is
// the same type as the driver contract's backend.Backend, named here so that
// a program can hold one without importing the contract package.
type Backend = backend.Backend
