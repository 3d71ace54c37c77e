package archive

import (
	"context"
	"errors"
	"fmt"
)

// deleter is a Backend that deletes many keys in one request (S3's
// DeleteObjects); DeletePrefix uses it when it can.
type deleter interface {
	DeleteKeys(ctx context.Context, keys []string) (int, error)
}

// deleteBatch is how many keys DeletePrefix lists before deleting them:
// S3's DeleteObjects takes up to 1000.
const deleteBatch = 1000

// DeletePrefix deletes every object of b whose key starts with prefix and
// returns how many it deleted. The prefix must end in "/" or name a whole
// key family: "claims/tenant=a/" never matches "claims/tenant=ab/...". An
// empty prefix is refused (it would delete the store).
func DeletePrefix(ctx context.Context, b Backend, prefix string) (int, error) {
	if prefix == "" {
		return 0, fmt.Errorf("BUG: archive: DeletePrefix with an empty prefix")
	}
	n := 0
	for {
		// List a batch, then delete it: deleting while a listing is open
		// is not safe on every backend (a directory walk).
		keys := make([]string, 0, 64)
		err := b.List(ctx, prefix, func(o Object) error {
			keys = append(keys, o.Key)
			if len(keys) == deleteBatch {
				return errBatchFull
			}
			return nil
		})
		if err != nil && !errors.Is(err, errBatchFull) {
			return n, fmt.Errorf("cannot list %s in %s: %w", prefix, b, err)
		}
		if len(keys) == 0 {
			return n, nil
		}
		d, err := deleteKeys(ctx, b, keys)
		n += d
		if err != nil {
			return n, fmt.Errorf("cannot delete under %s in %s: %w", prefix, b, err)
		}
		if len(keys) < deleteBatch {
			return n, nil
		}
	}
}

// errBatchFull stops a listing once a batch is full.
var errBatchFull = errors.New("archive: batch full")

func deleteKeys(ctx context.Context, b Backend, keys []string) (int, error) {
	if d, ok := b.(deleter); ok {
		return d.DeleteKeys(ctx, keys)
	}
	for i, k := range keys {
		if err := b.Delete(ctx, k); err != nil {
			return i, err
		}
	}
	return len(keys), nil
}
