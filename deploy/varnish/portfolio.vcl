vcl 4.1;
# portfolio behind Varnish 7 with the xkey module (Debian: varnish, varnish-modules): public
# documents are kept for their s-maxage and dropped when a change purges their surrogate keys;
# everything private, and every change, goes to the instances (docs/operations.md, An edge cache).
# Topology: nginx or HAProxy (TLS) -> Varnish (here :6081) -> the instances. The instances run
# with PURGE_URLS=http://<this Varnish>:6081/ and TRUSTED_PROXIES=<this Varnish's address>.
# Change the instances' addresses in the three places marked "Instances".

import std;
import directors;
import xkey;
import var;
import accept;

probe ready {
    .url = "/readyz";
    .interval = 2s;
    .timeout = 1s;
    .window = 3;
    .threshold = 2;
}

# Instances: one backend each.
backend instance1 { .host = "127.0.0.1"; .port = "8080"; .probe = ready; }

# Instances: the addresses that may purge (where the instances run).
acl instances {
    "127.0.0.1";
    "::1";
}

sub vcl_init {
    new site = directors.round_robin();
    # Instances: each backend above.
    site.add_backend(instance1);

    # The representations a document is negotiated between, HTML first (browsers name XML too).
    new representations = accept.rule("text/html");
    representations.add("text/html");
    representations.add("application/json");
    representations.add("application/xml");
    representations.add("text/xml");
}

sub vcl_recv {
    set req.backend_hint = site.backend();

    if (req.method == "PURGE") {
        if (client.ip !~ instances) {
            return (synth(403, "Purges are taken from the instances only."));
        }
        if (!req.http.xkey) {
            return (synth(400, "A purge names its surrogate keys in xkey."));
        }
        # The newest data version a change was purged at: a document read before it that
        # arrives afterwards is not kept (vcl_backend_response).
        if (std.integer(req.http.x-data-version, 0) > std.integer(var.global_get("purged-version"), 0)) {
            var.global_set("purged-version", req.http.x-data-version);
        }
        set req.http.n-gone = xkey.purge(req.http.xkey);
        return (synth(200, "Purged " + req.http.n-gone + " objects."));
    }

    # Changes, and anything but reading, go to the instances as they are.
    if (req.method != "GET" && req.method != "HEAD") {
        return (pass);
    }
    # HTTP Basic credentials name a user: what they read is theirs.
    if (req.http.Authorization) {
        return (pass);
    }
    # The server's probes and metrics answer for one instance, never for the cache.
    if (req.url ~ "^/(healthz|readyz|metrics)(\?|$)") {
        return (pass);
    }
    # Files and pictures never depend on cookies.
    if (req.url ~ "^/(css|img|js|bilder)/" || req.url ~ "^/favicon\.ico") {
        unset req.http.Cookie;
    }
    # A document is looked up whatever cookies come with it, and asked for without them
    # (vcl_backend_fetch): a public one does not depend on them and is the same for everyone. A
    # private one (loan lists, forms, /me.json, the login) says so, and is asked for again with
    # the client's cookies, never stored, and from then on its URL goes to the instances with each
    # client's own cookies (hit-for-miss). The kit needs no list of the site's private URLs: the
    # rewrite table is the site's to change.
    #
    # Accept: one of the three representations, so that odd headers neither split the cache
    # into variants nor reach the instance as something else than what is stored under them.
    # A suffix (.html, .xml, .json) names the representation itself.
    if (req.url ~ "^[^?]*\.(html|xml|json)(\?|$)") {
        unset req.http.Accept;
    } else {
        set req.http.Accept = representations.filter(req.http.Accept);
    }
    return (hash);
}

sub vcl_backend_fetch {
    # Passed, or known to be private: the request as it came.
    if (bereq.uncacheable) {
        return (fetch);
    }
    # A miss: asked for without cookies, which are held for a second try should it be private.
    if (bereq.retries == 0) {
        var.set("cookie", bereq.http.Cookie);
        unset bereq.http.Cookie;
    } else if (var.get("cookie") != "") {
        set bereq.http.Cookie = var.get("cookie");
    }
}

sub vcl_backend_response {
    # Private, or an error, for a request that came with cookies: asked again with them.
    if (bereq.retries == 0 && !bereq.uncacheable && var.get("cookie") != "" &&
        (beresp.http.Cache-Control ~ "(?i)private|no-store" || beresp.http.Set-Cookie)) {
        return (retry);
    }
    # A document read before the newest purge may show what that change replaced: delivered to
    # the clients that waited for it, kept by no one (and the next request fetches it again).
    if (beresp.http.xkey && std.integer(beresp.http.x-data-version, 0) < std.integer(var.global_get("purged-version"), 0)) {
        set beresp.ttl = 1s;
        set beresp.uncacheable = true;
        return (deliver);
    }
    # Anything that sets a cookie, or says private or no-store, is never kept (the built-in
    # rules that follow do that too); nothing else is kept without the instance's s-maxage.
    if (beresp.http.Set-Cookie || beresp.http.Cache-Control ~ "(?i)private|no-store") {
        set beresp.ttl = 120s;
        set beresp.uncacheable = true;
        return (deliver);
    }
}

sub vcl_deliver {
    # The keys and the version are for this cache: a CDN in front reads Surrogate-Key.
    unset resp.http.xkey;
    unset resp.http.x-data-version;
    unset resp.http.Via;
    unset resp.http.X-Varnish;
}
