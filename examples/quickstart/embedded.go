package main

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// embeddedEtcd is a one-member etcd server in a temporary directory,
// listening on free loopback ports.
type embeddedEtcd struct {
	etcd     *embed.Etcd
	dir      string
	Endpoint string // host:port for clients
}

// startEmbeddedEtcd starts the server and waits until it serves clients.
func startEmbeddedEtcd() (*embeddedEtcd, error) {
	dir, err := os.MkdirTemp("", "elector-quickstart-")
	if err != nil {
		return nil, err
	}
	clientURL, err := freeURL()
	if err != nil {
		return nil, err
	}
	peerURL, err := freeURL()
	if err != nil {
		return nil, err
	}
	cfg := embed.NewConfig()
	cfg.Name = "quickstart"
	cfg.Dir = dir
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{clientURL}, []url.URL{clientURL}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{peerURL}, []url.URL{peerURL}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.ListenMetricsUrls = nil
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop()) // silence the server
	cfg.UnsafeNoFsync = true                                       // a throwaway demo store: no need to wait for the disk
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("start embedded etcd: %w", err)
	}
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		e.Close()
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("embedded etcd: %w", err)
	case <-time.After(30 * time.Second):
		e.Close()
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("embedded etcd not ready after 30s")
	}
	return &embeddedEtcd{etcd: e, dir: dir, Endpoint: clientURL.Host}, nil
}

// Close stops the server and removes its directory.
func (e *embeddedEtcd) Close() {
	e.etcd.Close()
	_ = os.RemoveAll(e.dir)
}

// freeURL returns an http URL on a loopback port that was free just now.
func freeURL() (url.URL, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return url.URL{}, err
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		return url.URL{}, err
	}
	return url.URL{Scheme: "http", Host: addr}, nil
}
