package meta

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"time"

	"github.com/ankusa/ankusa/envelope"
)

// Node is the node's persisted identity.
type Node struct {
	Name      string    `json:"name"`
	Ordinal   uint16    `json:"ordinal"`
	CreatedAt time.Time `json:"created_at"`
}

// NodeIdentity returns the stored identity, if any.
func (s *Store) NodeIdentity() (Node, bool, error) {
	var n Node
	v, c, found, err := s.get([]byte(keyNode))
	if err != nil {
		return n, false, fmt.Errorf("cannot read node identity: %w", err)
	}
	if !found {
		return n, false, nil
	}
	defer c.Close()
	if err := json.Unmarshal(v, &n); err != nil {
		return n, false, fmt.Errorf("cannot decode node identity %q: %w", v, err)
	}
	return n, true, nil
}

// SetNodeIdentity stores the identity, synced.
func (s *Store) SetNodeIdentity(n Node) error {
	b, _ := json.Marshal(n)
	if err := s.set([]byte(keyNode), b, Sync); err != nil {
		return fmt.Errorf("cannot write node identity: %w", err)
	}
	return nil
}

// WALCheckpoint returns the stored numbering floor.
func (s *Store) WALCheckpoint() (seq uint64, id envelope.ID, err error) {
	v, c, found, err := s.get([]byte(keyWALCheckpoint))
	if err != nil {
		return 0, id, fmt.Errorf("cannot read wal checkpoint: %w", err)
	}
	if !found {
		return 0, id, nil
	}
	defer c.Close()
	if len(v) != 24 {
		return 0, id, fmt.Errorf("cannot decode wal checkpoint: %d bytes, want 24", len(v))
	}
	copy(id[:], v[:16])
	return binary.BigEndian.Uint64(v[16:]), id, nil
}

// SetWALCheckpoint stores the numbering floor, synced.
func (s *Store) SetWALCheckpoint(seq uint64, id envelope.ID) error {
	var v [24]byte
	copy(v[:16], id[:])
	binary.BigEndian.PutUint64(v[16:], seq)
	if err := s.set([]byte(keyWALCheckpoint), v[:], Sync); err != nil {
		return fmt.Errorf("cannot write wal checkpoint: %w", err)
	}
	return nil
}

// WALClosed is the seq of the last hook of the log at its last clean
// close (wal.type: disk only; 0 when it never closed cleanly).
func (s *Store) WALClosed() (uint64, error) {
	v, c, found, err := s.get([]byte(keyWALClosed))
	if err != nil {
		return 0, fmt.Errorf("cannot read the wal's clean-close record: %w", err)
	}
	if !found {
		return 0, nil
	}
	defer c.Close()
	if len(v) != 8 {
		return 0, fmt.Errorf("cannot decode the wal's clean-close record: %d bytes, want 8", len(v))
	}
	return binary.BigEndian.Uint64(v), nil
}

// SetWALClosed records the clean-close record, synced.
func (s *Store) SetWALClosed(seq uint64) error {
	if err := s.set([]byte(keyWALClosed), binary.BigEndian.AppendUint64(nil, seq), Sync); err != nil {
		return fmt.Errorf("cannot write the wal's clean-close record: %w", err)
	}
	return nil
}

// AdminToken is an admin token the node minted itself
// (admin.bootstrap_token): its name, the hex SHA-256 of the token (the
// token is never stored here) and its scopes.
type AdminToken struct {
	Name      string    `json:"name"`
	SHA256    string    `json:"sha256"`
	Scopes    []string  `json:"scopes"`
	CreatedAt time.Time `json:"created_at"`
}

// BootstrapToken returns the minted admin token, if there is one.
func (s *Store) BootstrapToken() (AdminToken, bool, error) {
	var t AdminToken
	found, err := s.getKey("the bootstrap admin token", func(dst []byte) []byte { return append(dst, keyBootstrapToken...) },
		func(v []byte) error { return json.Unmarshal(v, &t) })
	return t, found, err
}

// SetBootstrapToken stores the minted admin token, synced.
func (s *Store) SetBootstrapToken(t AdminToken) error {
	b, err := json.Marshal(t)
	if err == nil {
		err = s.set([]byte(keyBootstrapToken), b, Sync)
	}
	if err != nil {
		return fmt.Errorf("cannot store the bootstrap admin token: %w", err)
	}
	return nil
}
