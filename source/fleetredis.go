package source

import (
	"context"
	"errors"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// The redis store's keys, under source_store.namespace (ns):
//
//	ns "ss:epoch"           string: a random id the namespace got when a
//	                        node first used it; a node that finds another
//	                        one rebuilds its mirror, and one that finds none
//	                        gives Redis back its mirror (Redis lost it)
//	ns "ss:ver"             integer: the store's version, one INCR per write
//	ns "ss:log"             sorted set: every entity ever written (member
//	                        "s/<name>" or "r/<tenant>/<id>"), scored by the
//	                        version of its last write, removals included: a
//	                        node that is at version V reads what changed
//	                        since with one range, never the whole store
//	ns "ss:" member         hash {v: version, e: epoch, t: tenant, r: record,
//	                        o: origin}: a source or a route (record.go's
//	                        records); without r, the entity's removal (kept,
//	                        so a restore can tell it from an entity Redis
//	                        lost); o, on an entity a node gave back after a
//	                        loss, is its version in the epoch it came from
//	ns "ss:tok/" digest     string "<tenant>/<id>": the route holding a token
//	                        (hex SHA-256), so two nodes cannot give one
//	                        token to two routes
//	ns "ss:w/" change id    "1", expiring after markTTL: the write of that
//	                        change happened (a node that lost the answer
//	                        finds out, and writes its audit row)
//	ns "ss:changed"         pub/sub channel: the version of each write
//
// Every write is one Lua script: it checks each entity's version against
// what the writer checked its write against (check-and-set), and only
// then bumps the version, writes, logs and publishes, so a write is all
// or nothing and two nodes writing one entity cannot both win.
type fleetKeys struct {
	epoch, ver, log, prefix, channel string
}

func newFleetKeys(ns string) fleetKeys {
	p := ns + "ss:"
	return fleetKeys{epoch: p + "epoch", ver: p + "ver", log: p + "log", prefix: p, channel: p + "changed"}
}

func sourceMember(name string) string      { return "s/" + name }
func routeMember(tenant, id string) string { return "r/" + tenant + "/" + id }

// parseMember splits a log member into its kind and names.
func parseMember(m string) (route bool, tenant, name string, ok bool) {
	switch {
	case strings.HasPrefix(m, "s/"):
		return false, "", m[2:], len(m) > 2
	case strings.HasPrefix(m, "r/"):
		tenant, id, ok := strings.Cut(m[2:], "/")
		return true, tenant, id, ok && tenant != "" && id != ""
	}
	return false, "", "", false
}

// markTTL is how long a write's mark says it happened: far longer than a
// node takes to come back and ask.
const markTTL = 7 * 24 * 3600

// writeScript: KEYS[1] ver, KEYS[2] log, KEYS[3] the change's mark,
// KEYS[4] epoch, KEYS[5...] one per op. ARGV[1] channel, ARGV[2] mark ttl
// (s), ARGV[3] the epoch the writer follows, then five per op: kind
// (put, del, claim, free), expected version, log member, value, tenant.
// Answers {"ok", version}, {"conflict", op index, current version},
// {"taken", op index, holder} or {"epoch", current epoch}.
var writeScript = redis.NewScript(`
local ep = redis.call('GET', KEYS[4])
if ep ~= ARGV[3] then return {'epoch', ep or ''} end
local n = #KEYS - 4
for i = 1, n do
  local k, b = KEYS[4+i], 3 + (i-1)*5
  local kind = ARGV[b+1]
  if kind == 'put' or kind == 'del' then
    local cur = '0'
    if redis.call('HEXISTS', k, 'r') == 1 then cur = redis.call('HGET', k, 'v') end
    if cur ~= ARGV[b+2] then return {'conflict', tostring(i), cur} end
  elseif kind == 'claim' then
    local cur = redis.call('GET', k)
    if cur and cur ~= ARGV[b+4] then return {'taken', tostring(i), cur} end
  end
end
local v = redis.call('INCR', KEYS[1])
for i = 1, n do
  local k, b = KEYS[4+i], 3 + (i-1)*5
  local kind, member, value = ARGV[b+1], ARGV[b+3], ARGV[b+4]
  if kind == 'put' then
    redis.call('HSET', k, 'v', v, 'e', ARGV[3], 't', ARGV[b+5], 'r', value)
    redis.call('HDEL', k, 'o')
    redis.call('ZADD', KEYS[2], v, member)
  elseif kind == 'del' then
    redis.call('HSET', k, 'v', v, 'e', ARGV[3], 't', ARGV[b+5])
    redis.call('HDEL', k, 'r', 'o')
    redis.call('ZADD', KEYS[2], v, member)
  elseif kind == 'claim' then
    redis.call('SET', k, value)
  elseif kind == 'free' then
    if redis.call('GET', k) == value then redis.call('DEL', k) end
  end
end
redis.call('SET', KEYS[3], '1', 'EX', ARGV[2])
redis.call('PUBLISH', ARGV[1], v)
return {'ok', tostring(v)}
`)

// changesScript: KEYS[1] log, KEYS[2] ver, KEYS[3] epoch; ARGV[1] the
// version the reader is at, ARGV[2] how many at most, ARGV[3] the key
// prefix. Answers epoch, version, then four per entity changed since, in
// version order: member, version, tenant, record ("" when removed). One
// script, so each batch is one consistent read: an entity's record is at
// the version it is listed at.
var changesScript = redis.NewScript(`
local ms = redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. ARGV[1], '+inf', 'WITHSCORES', 'LIMIT', 0, tonumber(ARGV[2]))
local out = {redis.call('GET', KEYS[3]) or '', redis.call('GET', KEYS[2]) or '0'}
for i = 1, #ms, 2 do
  local h = redis.call('HMGET', ARGV[3] .. ms[i], 't', 'r')
  out[#out+1] = ms[i]
  out[#out+1] = ms[i+1]
  out[#out+1] = h[1] or ''
  out[#out+1] = h[2] or ''
end
return out
`)

// restoreScript gives Redis back what it lost, from a node's mirror:
// KEYS[1] epoch, KEYS[2] ver, KEYS[3] log; ARGV[1] the epoch Redis must
// be at (the restore
// goes into it), ARGV[2] the epoch the mirror is of, ARGV[3] the key
// prefix, ARGV[4] the channel, then four per entity: member, the
// entity's version in the mirror's epoch, tenant, record ("": its
// removal). Which form of an entity is the later one:
//   - one written in the current epoch by a write (e = the epoch, no o):
//     Redis's, always (it was written after the loss);
//   - one given back by a restore (o set): the higher origin wins;
//   - one that survived from the mirror's epoch (e = that epoch, or no
//     e): the higher version wins.
//
// The node's form, when later or absent from Redis, is written at a
// fresh version (INCR), so every node reads it as a change. Answers how
// many entities it wrote, or -1 when Redis is at another epoch.
var restoreScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return -1 end
local n = 0
for i = 5, #ARGV, 4 do
  local k, mv = ARGV[3] .. ARGV[i], tonumber(ARGV[i+1])
  local h = redis.call('HMGET', k, 'v', 'e', 'o')
  local later = false
  if h[1] then
    if h[3] then
      later = tonumber(h[3]) >= mv
    elseif h[2] == ARGV[1] and ARGV[1] ~= ARGV[2] then
      later = true
    else
      later = tonumber(h[1]) >= mv
    end
  end
  if not later then
    local v = redis.call('INCR', KEYS[2])
    redis.call('HSET', k, 'v', v, 'e', ARGV[1], 'o', ARGV[i+1], 't', ARGV[i+2])
    if ARGV[i+3] == '' then
      redis.call('HDEL', k, 'r')
    else
      redis.call('HSET', k, 'r', ARGV[i+3])
    end
    redis.call('ZADD', KEYS[3], v, ARGV[i])
    n = n + 1
  end
end
if n > 0 then redis.call('PUBLISH', ARGV[4], redis.call('GET', KEYS[2])) end
return n
`)

// lossScript gives the namespace a new epoch when it lost writes of the
// epoch it is at: KEYS[1] epoch, KEYS[2] ver; ARGV[1] the epoch the
// node follows, ARGV[2] the version it is at, ARGV[3] the new epoch.
// Writes after the loss are then told from what survived it by their
// epoch. Answers the epoch Redis is at.
var lossScript = redis.NewScript(`
local ep = redis.call('GET', KEYS[1])
if ep == ARGV[1] and tonumber(redis.call('GET', KEYS[2]) or '0') < tonumber(ARGV[2]) then
  redis.call('SET', KEYS[1], ARGV[3])
  return ARGV[3]
end
return ep or ''
`)

// change is one entity of a changes batch.
type change struct {
	member  string
	route   bool
	tenant  string
	name    string
	version uint64
	record  []byte // nil: removed
}

// changeBatch is one answer of changesScript.
type changeBatch struct {
	epoch   string
	version uint64
	changes []change
}

// fetchChanges reads up to limit entities changed after version.
func (k fleetKeys) fetchChanges(ctx context.Context, rdb *redis.Client, after uint64, limit int) (changeBatch, error) {
	var b changeBatch
	res, err := changesScript.Run(ctx, rdb, []string{k.log, k.ver, k.epoch}, after, limit, k.prefix).StringSlice()
	if err != nil {
		return b, err
	}
	if len(res) < 2 || (len(res)-2)%4 != 0 {
		return b, errors.New("the changes script answered a malformed list")
	}
	b.epoch = res[0]
	if b.version, err = strconv.ParseUint(res[1], 10, 64); err != nil {
		return b, errors.New("the store's version is not a number: " + res[1])
	}
	for i := 2; i < len(res); i += 4 {
		c := change{member: res[i]}
		var ok bool
		if c.route, c.tenant, c.name, ok = parseMember(c.member); !ok {
			return b, errors.New("the store's log holds a malformed member " + strconv.Quote(c.member))
		}
		score, err := strconv.ParseFloat(res[i+1], 64)
		if err != nil || score < 0 {
			return b, errors.New("the store's log scores " + strconv.Quote(c.member) + " with " + res[i+1])
		}
		c.version = uint64(score)
		if !c.route {
			c.tenant = res[i+2]
		}
		if res[i+3] != "" {
			c.record = []byte(res[i+3])
			if c.tenant == "" {
				return b, errors.New("the store's entry " + strconv.Quote(c.member) + " has no tenant")
			}
		}
		b.changes = append(b.changes, c)
	}
	return b, nil
}
