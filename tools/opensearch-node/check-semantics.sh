#!/usr/bin/env bash
# The search-sync semantics, checked with curl against a running node:  check-semantics.sh [PORT]  (default 9200)
# Prints each request (stderr), the key part of each response, PASS/FAIL, and 'N passed, N failed';
# exits 1 if any check failed. Needs curl and jq. (Re)creates indices idx_v1, idx_v2 (left in place) and idx_cjk (deleted).
set -uo pipefail
U=http://127.0.0.1:${1:-9200}
FAILS=0
PASSES=0
req() { # METHOD PATH [BODY] [CONTENT_TYPE]
  echo ">>> $1 $2" >&2
  if [ $# -ge 3 ]; then
    curl -sS -X "$1" "$U$2" -H "Content-Type: ${4:-application/json}" --data-binary "$3" -w '\n%{http_code}'
  else
    curl -sS -X "$1" "$U$2" -w '\n%{http_code}'
  fi
}
check() { # NAME ACTUAL EXPECTED
  if [ "$2" == "$3" ]; then echo "PASS $1: $2"; PASSES=$((PASSES+1)); else echo "FAIL $1: got [$2] want [$3]"; FAILS=$((FAILS+1)); fi
}
split() { BODY=$(printf '%s' "$1" | sed '$d'); CODE=$(printf '%s' "$1" | tail -n1); }

MAPPING='{"settings":{"number_of_shards":1,"number_of_replicas":0},
 "mappings":{"dynamic":"strict","properties":{"tenant":{"type":"keyword"},"owner":{"type":"keyword"},"title":{"type":"text"},"updated_at":{"type":"date"}}}}'

curl -sS -o /dev/null -X DELETE "$U/idx_v1,idx_v2,idx_cjk?ignore_unavailable=true"

split "$(req GET /)"
check "GET / status" "$CODE" 200
echo "    version: $(echo "$BODY" | jq -c '.version|{distribution,number,lucene_version}')"

split "$(req PUT /idx_v1 "$MAPPING")"
check "PUT /idx_v1 (explicit mapping)" "$CODE $(echo "$BODY" | jq -c .acknowledged)" "200 true"

BULK='{"index":{"_index":"idx_v1","_id":"1","version":5,"version_type":"external"}}
{"tenant":"t1","owner":"alice","title":"red apple v5","updated_at":"2026-01-05T00:00:00Z"}
{"index":{"_index":"idx_v1","_id":"1","version":3,"version_type":"external"}}
{"tenant":"t1","owner":"alice","title":"red apple v3 stale","updated_at":"2026-01-03T00:00:00Z"}
{"index":{"_index":"idx_v1","_id":"2","version":1,"version_type":"external"}}
{"tenant":"t2","owner":"bob","title":"red apple other tenant","updated_at":"2026-01-01T00:00:00Z"}
{"index":{"_index":"idx_v1","_id":"3","version":1,"version_type":"external"}}
{"tenant":"t1","owner":"alice","title":"green pear","updated_at":"2026-01-01T00:00:00Z"}
{"delete":{"_index":"idx_v1","_id":"3","version":2,"version_type":"external"}}
{"delete":{"_index":"idx_v1","_id":"2","version":1,"version_type":"external"}}
'
split "$(req POST /_bulk "$BULK" application/x-ndjson)"
check "POST /_bulk status" "$CODE" 200
check "bulk errors flag" "$(echo "$BODY" | jq -c .errors)" true
check "bulk item statuses" "$(echo "$BODY" | jq -c '[.items[]|to_entries[0].value.status]')" "[201,409,201,201,200,409]"
check "bulk item results" "$(echo "$BODY" | jq -c '[.items[]|to_entries[0].value|(.result // .error.type)]')" \
  '["created","version_conflict_engine_exception","created","created","deleted","version_conflict_engine_exception"]'
echo "    stale item: $(echo "$BODY" | jq -c '.items[1].index.error.reason')"

split "$(req POST /idx_v1/_refresh)"
check "POST /idx_v1/_refresh" "$CODE $(echo "$BODY" | jq -c '._shards.failed')" "200 0"

split "$(req GET /idx_v1/_doc/1)"
check "GET /idx_v1/_doc/1 version+title" "$(echo "$BODY" | jq -c '[._version,._source.title]')" '[5,"red apple v5"]'
split "$(req GET /idx_v1/_doc/3)"
check "GET /idx_v1/_doc/3 (deleted)" "$CODE $(echo "$BODY" | jq -c .found)" "404 false"

Q='{"query":{"bool":{"must":[{"match":{"title":"apple"}}],"filter":[{"term":{"tenant":"t1"}}]}}}'
split "$(req POST /idx_v1/_search "$Q")"
check "search match+tenant filter" "$(echo "$BODY" | jq -c '[.hits.total.value,[.hits.hits[]._id]]')" '[1,["1"]]'
split "$(req POST /idx_v1/_search '{"query":{"match":{"title":"apple"}}}')"
check "search match without filter" "$(echo "$BODY" | jq -c '[.hits.hits[]._id]|sort')" '["1","2"]'

Q_OWNER='{"query":{"bool":{"must":[{"match":{"title":"apple"}}],"filter":[{"term":{"owner":"alice"}}]}},
 "highlight":{"fields":{"title":{}}}}'
split "$(req POST /idx_v1/_search "$Q_OWNER")"
check "search match+owner term filter" "$(echo "$BODY" | jq -c '[.hits.total.value,[.hits.hits[]._id]]')" '[1,["1"]]'
check "highlight on title" "$(echo "$BODY" | jq -c '.hits.hits[0].highlight.title')" '["red <em>apple</em> v5"]'
split "$(req POST /idx_v1/_search '{"query":{"bool":{"filter":[{"term":{"owner":"Alice"}}]}}}')"
check "keyword term is exact (Alice != alice)" "$(echo "$BODY" | jq -c .hits.total.value)" 0

split "$(req PUT /idx_v2 "$MAPPING")"
check "PUT /idx_v2" "$CODE" 200
split "$(req POST /_aliases '{"actions":[{"add":{"index":"idx_v1","alias":"idx"}}]}')"
check "alias add idx->idx_v1" "$CODE" 200
split "$(req POST /idx/_search "$Q")"
check "search via alias (v1)" "$(echo "$BODY" | jq -c .hits.total.value)" 1
split "$(req POST /_aliases '{"actions":[{"remove":{"index":"idx_v1","alias":"idx"}},{"add":{"index":"idx_v2","alias":"idx"}}]}')"
check "alias swap (one request)" "$CODE $(echo "$BODY" | jq -c .acknowledged)" "200 true"
split "$(req GET /_alias/idx)"
check "GET /_alias/idx" "$(echo "$BODY" | jq -c 'keys')" '["idx_v2"]'
split "$(req POST /idx/_search "$Q")"
check "search via alias (v2, empty)" "$(echo "$BODY" | jq -c .hits.total.value)" 0

# CJK analyzer (from analysis-common): optional, SKIP if the analyzer is unknown
split "$(req POST /_analyze '{"analyzer":"cjk","text":"我们的搜索引擎"}')"
if [ "$CODE" = 200 ]; then
  check "cjk analyzer bigrams" "$(echo "$BODY" | jq -c '[.tokens[].token]')" '["我们","们的","的搜","搜索","索引","引擎"]'
  split "$(req PUT /idx_cjk '{"settings":{"number_of_shards":1,"number_of_replicas":0},
    "mappings":{"properties":{"owner":{"type":"keyword"},"body":{"type":"text","analyzer":"cjk"}}}}')"
  check "PUT /idx_cjk (cjk text field)" "$CODE" 200
  split "$(req POST '/_bulk?refresh=true' '{"index":{"_index":"idx_cjk","_id":"a"}}
{"owner":"alice","body":"我们的搜索引擎很好用"}
{"index":{"_index":"idx_cjk","_id":"b"}}
{"owner":"alice","body":"今天的天气很好"}
{"index":{"_index":"idx_cjk","_id":"c"}}
{"owner":"bob","body":"搜索引擎的索引"}
' application/x-ndjson)"
  check "bulk into idx_cjk" "$CODE $(echo "$BODY" | jq -c .errors)" "200 false"
  split "$(req POST /idx_cjk/_search '{"query":{"bool":{"must":[{"match_phrase":{"body":"搜索引擎"}}],
    "filter":[{"term":{"owner":"alice"}}]}},"highlight":{"fields":{"body":{}}}}')"
  check "cjk phrase search + owner filter" "$(echo "$BODY" | jq -c '[.hits.hits[]._id]')" '["a"]'
  echo "    highlight: $(echo "$BODY" | jq -c '.hits.hits[0].highlight.body')"
  split "$(req POST /idx_cjk/_search '{"query":{"match_phrase":{"body":"天气"}}}')"
  check "cjk search 天气" "$(echo "$BODY" | jq -c '[.hits.hits[]._id]')" '["b"]'
  curl -sS -o /dev/null -X DELETE "$U/idx_cjk"
else
  echo "SKIP cjk analyzer: _analyze gave $CODE (analysis-common not loaded?)"
fi

split "$(req GET '/_cat/indices/idx_v*?h=health,status,index,docs.count&s=index')"
check "GET /_cat/indices" "$CODE" 200
echo "$BODY" | sed 's/^/    /'

echo "$PASSES passed, $FAILS failed"
[ "$FAILS" -eq 0 ]
