//! Where a tenant's webhook may go (SSRF safety). A tenant names the URL, the platform's
//! network makes the request: without checks, a tenant could reach the cloud's metadata
//! service, a database on the private network or the platform's own admin endpoints.
//! So: `https` only (unless `allow_http`), no credentials in the URL, and no address that
//! is not public — loopback, private, link-local (169.254.169.254), shared, multicast,
//! unspecified, documentation, IPv4 inside IPv6 — unless `allow_private_targets`. The
//! address is checked when the endpoint is saved and again by the resolver the delivery
//! client connects through ([`GuardedResolver`]), so a name that resolves somewhere else
//! later (DNS rebinding) is refused at the moment it matters. Redirects are not followed
//! and no proxy is used (both would take the request past the check).

use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use reqwest::Url;
use reqwest::dns::{Addrs, Name, Resolve, Resolving};

/// What may be called.
#[derive(Debug, Clone, Copy)]
pub struct Policy {
    pub allow_http: bool,
    pub allow_private: bool,
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
                || s[0] == 0x0064 && s[1] == 0xff9b // NAT64 (reaches IPv4 inside)
                || (s[0] == 0 && s[1] == 0 && s[2] == 0 && s[3] == 0 && s[4] == 0 && s[5] == 0) // IPv4-compatible
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
        return Err(format!(
            "resolves to {}, which is not a public address",
            bad.ip()
        ));
    }
    Ok(parsed)
}

/// Whether the URL's host is an address literal that may not be called (the resolver
/// never sees literals).
pub fn literal_forbidden(url: &Url) -> Option<IpAddr> {
    let ip = match url.host()? {
        url::Host::Ipv4(ip) => IpAddr::V4(ip),
        url::Host::Ipv6(ip) => IpAddr::V6(ip),
        url::Host::Domain(_) => return None,
    };
    forbidden(ip).then_some(ip)
}

/// The delivery client's resolver: the system's answer, less every address that may
/// not be called; none left is an error (the connection is never made).
pub struct GuardedResolver;

impl Resolve for GuardedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let all: Vec<SocketAddr> = tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let allowed: Vec<SocketAddr> =
                all.iter().copied().filter(|a| !forbidden(a.ip())).collect();
            if allowed.is_empty() {
                return Err(format!(
                    "{host} resolves to no public address ({}): refused",
                    all.iter()
                        .map(|a| a.ip().to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                )
                .into());
            }
            Ok(Box::new(allowed.into_iter()) as Addrs)
        })
    }
}

#[cfg(test)]
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
            ("https://localhost/hook", "not a public address"),
            ("not a url", "not a URL"),
        ] {
            let e = check(prod, url).await.err().unwrap_or_default();
            assert!(e.contains(why), "{url}: {e}");
        }
        let dev = Policy {
            allow_http: true,
            allow_private: true,
        };
        assert!(check(dev, "http://127.0.0.1:9/hook").await.is_ok());
    }
}
