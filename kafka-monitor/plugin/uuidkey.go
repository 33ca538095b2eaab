package plugin

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// UUIDKey is a plugin that stores a request as its uuid at a Redis key
// made from the request, for the Redis Monitor to act on: the original's
// ActionHandler (info:..., stop:...) and StatsHandler (statsrequest:...).
type UUIDKey struct {
	// StatsName is the plugin's Name, e.g. "ActionHandler".
	StatsName string
	// JSONSchema is the plugin's Schema.
	JSONSchema []byte
	// Key is the key of a valid request.
	Key func(req Request) string
	// Stored is the message logged once the key is stored.
	Stored string
}

// Name is the stats name.
func (p UUIDKey) Name() string { return p.StatsName }

// Schema is the request schema.
func (p UUIDKey) Schema() []byte { return p.JSONSchema }

// Setup needs nothing.
func (UUIDKey) Setup(context.Context, Env) error { return nil }

// Handle sets the request's key to its uuid.
func (p UUIDKey) Handle(ctx context.Context, req Request, tx redis.Pipeliner) (string, error) {
	tx.Set(ctx, p.Key(req), Field(req, "uuid"), 0)
	return p.Stored, nil
}

// Field is req's field name when it is a string, else "".
func Field(req Request, name string) string {
	s, _ := req[name].(string)
	return s
}
