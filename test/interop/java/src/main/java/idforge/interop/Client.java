package idforge.interop;

import com.nimbusds.jose.JOSEObjectType;
import com.nimbusds.jose.JWSAlgorithm;
import com.nimbusds.jose.jwk.source.JWKSource;
import com.nimbusds.jose.jwk.source.JWKSourceBuilder;
import com.nimbusds.jose.proc.DefaultJOSEObjectTypeVerifier;
import com.nimbusds.jose.proc.JWSVerificationKeySelector;
import com.nimbusds.jose.proc.SecurityContext;
import com.nimbusds.jose.util.JSONObjectUtils;
import com.nimbusds.jwt.JWTClaimsSet;
import com.nimbusds.jwt.proc.DefaultJWTClaimsVerifier;
import com.nimbusds.jwt.proc.DefaultJWTProcessor;
import com.nimbusds.oauth2.sdk.AuthorizationCode;
import com.nimbusds.oauth2.sdk.AuthorizationCodeGrant;
import com.nimbusds.oauth2.sdk.ClientCredentialsGrant;
import com.nimbusds.oauth2.sdk.RefreshTokenGrant;
import com.nimbusds.oauth2.sdk.ResponseType;
import com.nimbusds.oauth2.sdk.Scope;
import com.nimbusds.oauth2.sdk.TokenRequest;
import com.nimbusds.oauth2.sdk.TokenResponse;
import com.nimbusds.oauth2.sdk.auth.ClientAuthentication;
import com.nimbusds.oauth2.sdk.auth.ClientSecretBasic;
import com.nimbusds.oauth2.sdk.auth.Secret;
import com.nimbusds.oauth2.sdk.http.HTTPRequest;
import com.nimbusds.oauth2.sdk.id.ClientID;
import com.nimbusds.oauth2.sdk.id.Issuer;
import com.nimbusds.oauth2.sdk.id.State;
import com.nimbusds.oauth2.sdk.token.AccessToken;
import com.nimbusds.oauth2.sdk.token.Tokens;
import com.nimbusds.openid.connect.sdk.AuthenticationErrorResponse;
import com.nimbusds.openid.connect.sdk.AuthenticationRequest;
import com.nimbusds.openid.connect.sdk.AuthenticationResponse;
import com.nimbusds.openid.connect.sdk.AuthenticationResponseParser;
import com.nimbusds.openid.connect.sdk.Nonce;
import com.nimbusds.openid.connect.sdk.OIDCTokenResponseParser;
import com.nimbusds.openid.connect.sdk.UserInfoRequest;
import com.nimbusds.openid.connect.sdk.UserInfoResponse;
import com.nimbusds.openid.connect.sdk.op.OIDCProviderMetadata;
import com.nimbusds.openid.connect.sdk.token.OIDCTokens;
import com.nimbusds.openid.connect.sdk.validators.IDTokenValidator;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.URL;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * A relying party written as the Nimbus OAuth 2.0 SDK with OpenID Connect extensions documents one,
 * at the SDK's defaults: discovery, the code flow with state and nonce (the SDK adds PKCE only when
 * given a code verifier), ID token validation (IDTokenValidator), userinfo, refresh,
 * client_credentials, and a resource server's check of the access token with Nimbus JOSE+JWT's
 * DefaultJWTProcessor over a remote JWK set (default clock skew 60 s). test/interop/matrix.test.ts
 * drives it over HTTP.
 *
 * <p>Environment: IDFORGE_ISSUER, IDFORGE_CLIENT_ID, IDFORGE_CLIENT_SECRET, IDFORGE_SCOPES,
 * IDFORGE_API_AUDIENCE; for client_credentials IDFORGE_SYSTEM_ISSUER, IDFORGE_SYSTEM_CLIENT_ID,
 * IDFORGE_SYSTEM_CLIENT_SECRET, IDFORGE_ADMIN_AUDIENCE, IDFORGE_ADMIN_URL. Prints
 * "listening http://127.0.0.1:&lt;port&gt;" once it serves.
 */
public final class Client {
  private static final Map<String, Nonce> FLOWS = new ConcurrentHashMap<>();

  /** A failed step: its name and the library's own words. */
  private static final class StepFailure extends Exception {
    final String step;

    StepFailure(String step, String message) {
      super(message);
      this.step = step;
    }
  }

  private static String env(String name) {
    String value = System.getenv(name);
    if (value == null) throw new IllegalStateException(name + " is not set");
    return value;
  }

  private static void reply(HttpExchange ex, int status, Map<String, Object> body) throws IOException {
    byte[] bytes = JSONObjectUtils.toJSONString(body).getBytes(StandardCharsets.UTF_8);
    ex.getResponseHeaders().set("content-type", "application/json");
    ex.sendResponseHeaders(status, bytes.length);
    ex.getResponseBody().write(bytes);
    ex.close();
  }

  /** An API that accepts the issuer's JWT access tokens (RFC 9068, typ at+jwt) for its audience. */
  private static Map<String, Object> checkAccessToken(OIDCProviderMetadata op, String audience, AccessToken token) throws Exception {
    DefaultJWTProcessor<SecurityContext> processor = new DefaultJWTProcessor<>();
    processor.setJWSTypeVerifier(new DefaultJOSEObjectTypeVerifier<>(new JOSEObjectType("at+jwt")));
    JWKSource<SecurityContext> keys = JWKSourceBuilder.create(op.getJWKSetURI().toURL()).build();
    processor.setJWSKeySelector(new JWSVerificationKeySelector<>(JWSAlgorithm.RS256, keys));
    processor.setJWTClaimsSetVerifier(new DefaultJWTClaimsVerifier<>(
        audience, new JWTClaimsSet.Builder().issuer(op.getIssuer().getValue()).build(), Set.of("sub", "exp", "iat", "jti", "scp")));
    return processor.process(token.getValue(), null).toJSONObject();
  }

  /** The token endpoint's answer: OIDCTokens when it holds an ID token. */
  private static Tokens tokens(TokenRequest request, String step) throws Exception {
    TokenResponse response = OIDCTokenResponseParser.parse(request.toHTTPRequest().send());
    if (!response.indicatesSuccess()) {
      throw new StepFailure(step, response.toErrorResponse().getErrorObject().toJSONObject().toString());
    }
    return response.toSuccessResponse().getTokens();
  }

  public static void main(String[] args) throws Exception {
    OIDCProviderMetadata op = OIDCProviderMetadata.resolve(new Issuer(env("IDFORGE_ISSUER")));
    ClientID clientId = new ClientID(env("IDFORGE_CLIENT_ID"));
    ClientAuthentication auth = new ClientSecretBasic(clientId, new Secret(env("IDFORGE_CLIENT_SECRET")));
    HttpServer server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    String base = "http://127.0.0.1:" + server.getAddress().getPort();
    URI callback = URI.create(base + "/callback");

    server.createContext("/login", ex -> {
      State state = new State();
      Nonce nonce = new Nonce();
      FLOWS.put(state.getValue(), nonce);
      AuthenticationRequest request = new AuthenticationRequest.Builder(new ResponseType("code"), Scope.parse(env("IDFORGE_SCOPES")), clientId, callback)
          .endpointURI(op.getAuthorizationEndpointURI()).state(state).nonce(nonce).build();
      ex.getResponseHeaders().set("location", request.toURI().toString());
      ex.sendResponseHeaders(302, -1);
      ex.close();
    });

    server.createContext("/callback", ex -> {
      String step = "authorization";
      try {
        AuthenticationResponse response = AuthenticationResponseParser.parse(URI.create(base + ex.getRequestURI()));
        Nonce nonce = response.getState() == null ? null : FLOWS.remove(response.getState().getValue());
        if (nonce == null) throw new StepFailure("state", "unknown state");
        if (!response.indicatesSuccess()) {
          AuthenticationErrorResponse error = response.toErrorResponse();
          throw new StepFailure("authorization", error.getErrorObject().toJSONObject().toString());
        }
        AuthorizationCode code = response.toSuccessResponse().getAuthorizationCode();
        OIDCTokens tokens = tokens(new TokenRequest(op.getTokenEndpointURI(), auth, new AuthorizationCodeGrant(code, callback)), "token").toOIDCTokens();
        step = "id_token";
        IDTokenValidator validator = new IDTokenValidator(op.getIssuer(), clientId, JWSAlgorithm.RS256, op.getJWKSetURI().toURL());
        Map<String, Object> idToken = validator.validate(tokens.getIDToken(), nonce).toJSONObject();
        step = "userinfo";
        UserInfoResponse info = UserInfoResponse.parse(new UserInfoRequest(op.getUserInfoEndpointURI(), tokens.getBearerAccessToken()).toHTTPRequest().send());
        if (!info.indicatesSuccess()) throw new StepFailure(step, info.toErrorResponse().getErrorObject().toJSONObject().toString());
        Map<String, Object> userinfo = info.toSuccessResponse().getUserInfo().toJSONObject();
        step = "access_token";
        String audience = env("IDFORGE_API_AUDIENCE");
        Map<String, Object> access = checkAccessToken(op, audience, tokens.getAccessToken());
        step = "refresh";
        Tokens refreshed = tokens(new TokenRequest(op.getTokenEndpointURI(), auth, new RefreshTokenGrant(tokens.getRefreshToken())), step);
        step = "refreshed_access_token";
        Map<String, Object> refreshedAccess = checkAccessToken(op, audience, refreshed.getAccessToken());
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("versions", Map.of("com.nimbusds:oauth2-oidc-sdk", String.valueOf(TokenRequest.class.getPackage().getImplementationVersion())));
        out.put("idToken", idToken);
        out.put("userinfo", userinfo);
        out.put("accessToken", access);
        out.put("refreshed", refreshedAccess);
        out.put("refreshTokenNew", refreshed.getRefreshToken() != null && !refreshed.getRefreshToken().equals(tokens.getRefreshToken()));
        if (refreshed instanceof OIDCTokens && ((OIDCTokens) refreshed).getIDToken() != null) {
          out.put("refreshedIdToken", validator.validate(((OIDCTokens) refreshed).getIDToken(), null).toJSONObject());
        }
        reply(ex, 200, out);
      } catch (StepFailure failure) {
        reply(ex, 502, Map.of("step", failure.step, "error", failure.getMessage()));
      } catch (Exception err) {
        reply(ex, 502, Map.of("step", step, "error", err.getClass().getSimpleName() + ": " + err.getMessage()));
      }
    });

    server.createContext("/client-credentials", ex -> {
      String step = "token";
      try {
        OIDCProviderMetadata system = OIDCProviderMetadata.resolve(new Issuer(env("IDFORGE_SYSTEM_ISSUER")));
        ClientAuthentication systemAuth = new ClientSecretBasic(new ClientID(env("IDFORGE_SYSTEM_CLIENT_ID")), new Secret(env("IDFORGE_SYSTEM_CLIENT_SECRET")));
        String audience = env("IDFORGE_ADMIN_AUDIENCE");
        TokenRequest request = new TokenRequest(system.getTokenEndpointURI(), systemAuth, new ClientCredentialsGrant(), new Scope("admin"), List.of(URI.create(audience)), null);
        Tokens tokens = tokens(request, step);
        step = "access_token";
        Map<String, Object> access = checkAccessToken(system, audience, tokens.getAccessToken());
        step = "admin_api";
        HTTPRequest call = new HTTPRequest(HTTPRequest.Method.GET, new URL(env("IDFORGE_ADMIN_URL") + "/tenants"));
        call.setAuthorization(tokens.getAccessToken().toAuthorizationHeader());
        int status = call.send().getStatusCode();
        reply(ex, 200, Map.of("accessToken", access, "adminApiStatus", status));
      } catch (StepFailure failure) {
        reply(ex, 502, Map.of("step", failure.step, "error", failure.getMessage()));
      } catch (Exception err) {
        reply(ex, 502, Map.of("step", step, "error", err.getClass().getSimpleName() + ": " + err.getMessage()));
      }
    });

    server.start();
    System.out.println("listening " + base);
    System.out.flush();
  }
}
