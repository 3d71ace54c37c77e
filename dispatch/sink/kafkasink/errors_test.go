package kafkasink

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ankusa/ankusa/dispatch"
)

func TestClassify(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err                 error
		class               class
		permanent, answered bool
	}{
		{kerr.MessageTooLarge, classRecord, true, true},
		{fmt.Errorf("%w (uncompressed_bytes=9)", kerr.MessageTooLarge), classRecord, true, true},
		{kerr.RecordListTooLarge, classRecord, true, true},
		{kerr.InvalidRecord, classRecord, true, true},
		{kerr.InvalidTimestamp, classRecord, true, true},
		{kerr.InvalidTopicException, classRefused, true, true},
		{kerr.TopicAuthorizationFailed, classUnauthorized, false, true},
		{kerr.ClusterAuthorizationFailed, classUnauthorized, false, true},
		{fmt.Errorf("%w, last err: %w", kgo.ErrRecordTimeout, kerr.SaslAuthenticationFailed), classUnauthorized, false, true},
		{kerr.UnknownTopicOrPartition, classAnswered, false, true},
		{kerr.NotEnoughReplicas, classAnswered, false, true},
		{kgo.ErrRecordTimeout, classNoAck, false, false},
		{fmt.Errorf("%w, last err: %w", kgo.ErrRecordTimeout, io.EOF), classNoAck, false, false},
		{context.DeadlineExceeded, classNoAck, false, false},
		{kgo.ErrClientClosed, classRetry, false, false},
		{errors.New("unable to dial: connection refused"), classRetry, false, false},
	} {
		c := classify(tc.err)
		de := wrap(c, tc.err).(*dispatch.Error)
		if c != tc.class || de.Permanent != tc.permanent || de.Answered != tc.answered || !errors.Is(de, tc.err) {
			t.Errorf("%v: class %d permanent %v answered %v; want class %d permanent %v answered %v",
				tc.err, c, de.Permanent, de.Answered, tc.class, tc.permanent, tc.answered)
		}
	}
}
