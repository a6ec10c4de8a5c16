//! Where a request to a URL someone else names may go (SSRF safety). A tenant names a
//! webhook endpoint, a provider names its output's URL; the platform's network makes the
//! request. Without checks either could reach the cloud's metadata service, a database on
//! the private network or the platform's own admin endpoints. So no address that is not
//! public — loopback, private, link-local (169.254.169.254), shared, multicast,
//! unspecified, documentation, IPv4 inside IPv6 — unless the caller's settings allow it.
//!
//! An address is checked by the resolver the client connects through
//! ([`GuardedResolver`]), so a name that resolves somewhere else later (DNS rebinding) is
//! refused at the moment it matters; address literals never reach a resolver, so they are
//! checked on the URL ([`literal_forbidden`]) before the request and on every redirect
//! ([`Guard::redirects`]). No proxy is used (it would take the request past the check).

use std::error::Error as StdError;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;

use reqwest::Url;
use reqwest::dns::{Addrs, Name, Resolve, Resolving};

/// What may be called (a webhook endpoint's rules).
#[derive(Debug, Clone, Copy)]
pub struct Policy {
    pub allow_http: bool,
    pub allow_private: bool,
}

/// A request refused by the guard, and why. Typed so a caller can tell it from a
/// network failure in a client's error chain ([`refusal`]): a refusal is final, a
/// failure may be retried.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{0}")]
pub struct Refused(pub String);

/// The guard's refusal somewhere in `e`'s chain of sources, if that is why it failed.
pub fn refusal<'a>(e: &'a (dyn StdError + 'static)) -> Option<&'a Refused> {
    let mut at: Option<&(dyn StdError + 'static)> = Some(e);
    while let Some(e) = at {
        if let Some(r) = e.downcast_ref::<Refused>() {
            return Some(r);
        }
        at = e.source();
    }
    None
}

/// Whether `ip` is no public unicast address.
pub fn forbidden(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => forbidden_v4(v4),
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return forbidden_v4(v4);
            }
            let s = v6.segments();
            v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (s[0] & 0xfe00) == 0xfc00 // unique local (fd00:ec2::254 too)
                || (s[0] & 0xffc0) == 0xfe80 // link-local
                || (s[0] & 0xffc0) == 0xfec0 // site-local (deprecated, still routed inside)
                || s[0] == 0x2001 && s[1] == 0x0db8 // documentation
                // Forms that carry an IPv4 address a relay or translator reaches for
                // the caller: NAT64 (64:ff9b::/96, and the local-use 64:ff9b:1::/48),
                // 6to4 (2002::/16, the IPv4 in its next 32 bits), Teredo (2001::/32,
                // the server's IPv4 and the client's, obfuscated), SIIT's
                // IPv4-translated (::ffff:0:a.b.c.d) and IPv4-compatible (::a.b.c.d).
                // None is a webhook's or a provider's address; all are refused rather
                // than decoded, so no encoding of a private IPv4 slips through.
                || s[0] == 0x0064 && s[1] == 0xff9b
                || s[0] == 0x2002
                || s[0] == 0x2001 && s[1] == 0x0000
                || (s[..4] == [0, 0, 0, 0] && s[4] == 0xffff && s[5] == 0)
                || s[..6] == [0, 0, 0, 0, 0, 0]
        }
    }
}

fn forbidden_v4(ip: Ipv4Addr) -> bool {
    let [a, b, ..] = ip.octets();
    ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || ip.is_unspecified()
        || ip.is_broadcast()
        || ip.is_multicast()
        || ip.is_documentation()
        || a == 0 // "this network"
        || (a == 100 && (64..128).contains(&b)) // shared address space (carrier NAT)
        || (a == 192 && b == 0 && ip.octets()[2] == 0) // IETF protocol assignments
        || (a == 198 && (b == 18 || b == 19)) // benchmarking
        || a >= 240 // reserved
}

/// Why `url` may not be an endpoint, if it may not; the addresses its host has now are
/// checked too (a name that does not resolve is refused: nothing could be delivered).
pub async fn check(policy: Policy, url: &str) -> Result<Url, String> {
    let parsed = Url::parse(url).map_err(|e| format!("is not a URL ({e})"))?;
    match parsed.scheme() {
        "https" => {}
        "http" if policy.allow_http => {}
        "http" => return Err("must be https".into()),
        other => return Err(format!("must be https, not {other}")),
    }
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err("must not carry credentials (sign-in goes in the signature)".into());
    }
    if parsed.fragment().is_some() {
        return Err("must not have a #fragment".into());
    }
    let host = parsed.host_str().ok_or("has no host")?;
    if policy.allow_private {
        return Ok(parsed);
    }
    let port = parsed.port_or_known_default().unwrap_or(443);
    let addrs: Vec<SocketAddr> = match parsed.host() {
        Some(url::Host::Ipv4(ip)) => vec![SocketAddr::new(IpAddr::V4(ip), port)],
        Some(url::Host::Ipv6(ip)) => vec![SocketAddr::new(IpAddr::V6(ip), port)],
        _ => tokio::net::lookup_host((host, port))
            .await
            .map_err(|e| format!("host {host} does not resolve ({e})"))?
            .collect(),
    };
    if let Some(bad) = addrs.iter().find(|a| forbidden(a.ip())) {
        // The address stays in the operators' log: told to the caller, a refusal would
        // map the private network's names for whoever sends them (a DNS oracle).
        tracing::info!(host, address = %bad.ip(), "endpoint refused: its host resolves to an address that is not public");
        return Err(match parsed.host() {
            Some(url::Host::Domain(_)) => {
                format!("host {host} resolves to an address that is not public")
            }
            _ => format!("{host} is not a public address"),
        });
    }
    Ok(parsed)
}

/// Whether the URL's host is an address literal that may not be called (the resolver
/// never sees literals).
pub fn literal_forbidden(url: &Url) -> Option<IpAddr> {
    let ip = literal(url)?;
    forbidden(ip).then_some(ip)
}

fn literal(url: &Url) -> Option<IpAddr> {
    match url.host()? {
        url::Host::Ipv4(ip) => Some(IpAddr::V4(ip)),
        url::Host::Ipv6(ip) => Some(IpAddr::V6(ip)),
        url::Host::Domain(_) => None,
    }
}

/// A resolver that answers the system's addresses less every one that may not be
/// called; none left is an error (the connection is never made). `Default` allows public
/// addresses only.
#[derive(Debug, Clone, Default)]
pub struct GuardedResolver {
    /// Addresses allowed although not public (a provider on the private network, tests).
    exceptions: Arc<[IpAddr]>,
}

impl GuardedResolver {
    fn permits(&self, ip: IpAddr) -> bool {
        !forbidden(ip) || self.exceptions.contains(&ip)
    }
}

impl Resolve for GuardedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let host = name.as_str().to_owned();
        let this = self.clone();
        Box::pin(async move {
            let all: Vec<SocketAddr> = tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let allowed: Vec<SocketAddr> = all
                .iter()
                .copied()
                .filter(|a| this.permits(a.ip()))
                .collect();
            if allowed.is_empty() {
                // Which addresses, only in the operators' log (see `check`).
                let listed: Vec<String> = all.iter().map(|a| a.ip().to_string()).collect();
                tracing::info!(host, addresses = ?listed, "connection refused: no public address");
                return Err(
                    Refused(format!("{host} resolves to no public address: refused")).into(),
                );
            }
            Ok(Box::new(allowed.into_iter()) as Addrs)
        })
    }
}

/// The rules of a client that fetches URLs someone else names (a provider's output):
/// http or https, public addresses (and `exceptions`) only, checked on every hop.
#[derive(Debug, Clone, Default)]
pub struct Guard {
    resolver: GuardedResolver,
}

/// Redirects followed before a fetch is given up on.
pub const MAX_REDIRECTS: usize = 5;

impl Guard {
    /// Public addresses, and `exceptions` although they are not.
    pub fn new(exceptions: Vec<IpAddr>) -> Guard {
        Guard {
            resolver: GuardedResolver {
                exceptions: exceptions.into(),
            },
        }
    }

    /// Why `url` may not be fetched, checked before any connection: its scheme, and its
    /// host when it is an address literal (a name is checked when it resolves).
    pub fn check_url(&self, url: &Url) -> Result<(), Refused> {
        if !matches!(url.scheme(), "http" | "https") {
            return Err(Refused(format!(
                "{} URLs are not fetched: http or https only",
                url.scheme()
            )));
        }
        match literal(url) {
            Some(ip) if !self.resolver.permits(ip) => {
                Err(Refused(format!("{ip} is not a public address: refused")))
            }
            _ => Ok(()),
        }
    }

    /// Follows at most [`MAX_REDIRECTS`], each checked like the first URL
    /// ([`Guard::check_url`]); the connection to a named host meets the resolver.
    pub fn redirects(&self) -> reqwest::redirect::Policy {
        let guard = self.clone();
        reqwest::redirect::Policy::custom(move |attempt| {
            if attempt.previous().len() >= MAX_REDIRECTS {
                return attempt.error(Refused(format!(
                    "more than {MAX_REDIRECTS} redirects: refused"
                )));
            }
            match guard.check_url(attempt.url()) {
                Ok(()) => attempt.follow(),
                Err(Refused(why)) => attempt.error(Refused(format!("a redirect to {why}"))),
            }
        })
    }

    /// A client builder with the guard in place: its resolver, its redirect policy, no
    /// proxy. Callers add timeouts and still check the first URL ([`Guard::check_url`]).
    pub fn client(&self) -> reqwest::ClientBuilder {
        reqwest::Client::builder()
            .dns_resolver(Arc::new(self.resolver.clone()))
            .redirect(self.redirects())
            .no_proxy()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn private_and_special_addresses_are_forbidden_and_public_ones_are_not() {
        for bad in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "255.255.255.255",
            "224.0.0.1",
            "::1",
            "::",
            "fd00:ec2::254",
            "fe80::1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            // 6to4 of 127.0.0.1 and of 10.0.0.1, and of a public address too.
            "2002:7f00:1::",
            "2002:a00:1::1",
            "2002:101:101::1",
            // Teredo (server 65.54.227.120, client 10.0.0.1 obfuscated).
            "2001:0:4136:e378:8000:63bf:f5ff:fffe",
            // SIIT IPv4-translated, NAT64 local-use, IPv4-compatible.
            "::ffff:0:a00:1",
            "::ffff:0:7f00:1",
            "64:ff9b:1::a00:1",
            "64:ff9b::7f00:1",
            "::7f00:1",
        ] {
            let ip: IpAddr = bad.parse().unwrap_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED));
            assert!(forbidden(ip), "{bad}");
        }
        for good in ["1.1.1.1", "93.184.215.14", "2606:4700:4700::1111"] {
            let ip: IpAddr = good.parse().unwrap_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED));
            assert!(!forbidden(ip), "{good}");
        }
    }

    #[tokio::test]
    async fn urls_are_refused_with_their_reason() {
        let prod = Policy {
            allow_http: false,
            allow_private: false,
        };
        for (url, why) in [
            ("http://example.com/hook", "https"),
            ("ftp://example.com/hook", "https"),
            ("https://user:pw@example.com/hook", "credentials"),
            ("https://127.0.0.1/hook", "not a public address"),
            ("https://10.0.0.7/hook", "not a public address"),
            (
                "https://169.254.169.254/latest/meta-data",
                "not a public address",
            ),
            ("https://[::1]/hook", "not a public address"),
            ("https://localhost/hook", "not public"),
            ("https://[2002:a00:1::1]/hook", "not a public address"),
            ("not a url", "not a URL"),
        ] {
            let e = check(prod, url).await.err().unwrap_or_default();
            assert!(e.contains(why), "{url}: {e}");
        }
        // A name's refusal does not tell where it resolves (no DNS oracle).
        let e = check(prod, "https://localhost/hook")
            .await
            .err()
            .unwrap_or_default();
        assert!(!e.contains("127.0.0.1") && !e.contains("::1"), "{e}");
        let dev = Policy {
            allow_http: true,
            allow_private: true,
        };
        assert!(check(dev, "http://127.0.0.1:9/hook").await.is_ok());
    }

    #[test]
    fn a_guard_takes_public_addresses_and_its_exceptions_only() {
        let strict = Guard::default();
        let loopback = Guard::new(vec!["127.0.0.1".parse().unwrap()]);
        let url = |s: &str| Url::parse(s).unwrap();
        assert!(strict.check_url(&url("http://127.0.0.1:9/x")).is_err());
        assert!(loopback.check_url(&url("http://127.0.0.1:9/x")).is_ok());
        for bad in [
            "http://169.254.169.254/latest/meta-data",
            "http://10.0.0.1/x",
            "http://[::1]/x",
            "file:///etc/passwd",
            "gopher://1.1.1.1/x",
        ] {
            assert!(loopback.check_url(&url(bad)).is_err(), "{bad}");
        }
        // Names are left to the resolver.
        assert!(strict.check_url(&url("https://example.com/x")).is_ok());
    }

    #[tokio::test]
    async fn the_resolver_drops_what_may_not_be_called() {
        let strict = GuardedResolver::default();
        let name: Name = "localhost".parse().unwrap();
        let e = strict.resolve(name).await.err().unwrap();
        let refused = refusal(e.as_ref()).map(ToString::to_string);
        assert!(
            refused
                .as_deref()
                .is_some_and(|r| r.contains("no public address") && !r.contains("127.0.0.1")),
            "{e}"
        );
    }
}
