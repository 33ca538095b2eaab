# The helm test's script (templates/tests/test-crawl.yaml), run by the
# busybox of the REST image: feed a crawl of CRAWL_URL to REST_URL, then
# poll GET /crawls/<crawlid> until its state is complete (the Redis Monitor
# sent its crawl-complete), and check that a page was published. Fails
# after TIMEOUT seconds. ops/chartcheck runs it against a local cluster.
set -eu
bb=/busybox/busybox
[ -x "$bb" ] || bb=busybox
auth="Authorization: Bearer ${API_TOKEN:-}"
appid=helm-test
crawlid="helm-test-$($bb date +%s)-$$"
body="{\"url\": \"$CRAWL_URL\", \"appid\": \"$appid\", \"crawlid\": \"$crawlid\", \"maxdepth\": 0}"
deadline=$(( $($bb date +%s) + TIMEOUT ))
echo "POST $REST_URL/feed $body"
# Each request within 30 s (busybox's timeout: wget -T crashes some busybox
# builds). A refusal (4xx) fails at once; an error (Kafka not there yet) is
# tried again until the deadline.
until answer=$($bb timeout 30 $bb wget -q -O - --header "Content-Type: application/json" --header "$auth" --post-data "$body" "$REST_URL/feed" 2>&1); do
  case "$answer" in
    *' 4'[0-9][0-9]' '*) echo "FAIL: the REST service refused the crawl: $answer"; exit 1 ;;
  esac
  if [ "$($bb date +%s)" -ge "$deadline" ]; then
    echo "FAIL: could not feed the crawl within ${TIMEOUT}s: $answer"
    exit 1
  fi
  $bb sleep 2
done
echo "$answer"
while :; do
  answer=$($bb timeout 30 $bb wget -q -O - --header "$auth" "$REST_URL/crawls/$crawlid?appid=$appid" 2>&1) || true
  # The answer is indented JSON: match it without its blanks.
  answer=$(echo "$answer" | $bb tr -d ' \t\r\n')
  case "$answer" in
    *'"state":"complete"'*) break ;;
  esac
  if [ "$($bb date +%s)" -ge "$deadline" ]; then
    echo "FAIL: no crawl-complete for $crawlid within ${TIMEOUT}s; last answer: $answer"
    exit 1
  fi
  $bb sleep 2
done
echo "$answer"
published=$(echo "$answer" | $bb sed -n 's/.*"published":\([0-9]*\).*/\1/p')
if [ "${published:-0}" -lt 1 ]; then
  echo "FAIL: $crawlid completed without a published page: can the crawlers reach $CRAWL_URL?"
  exit 1
fi
echo "OK: $crawlid complete, $published page(s) published"
