package io.graphlane.server;

import org.apache.pekko.http.javadsl.model.StatusCode;
import org.apache.pekko.http.javadsl.model.StatusCodes;

/**
 * An error answered in OpenAI's shape: {@code {"error":{"message","type","param","code"}}}.
 * Thrown by request parsing and mapped to a response by the routes.
 */
final class ApiError extends RuntimeException {
    private static final long serialVersionUID = 1L;

    private final transient StatusCode status;
    private final String type;
    private final String param;
    private final String code;

    ApiError(StatusCode status, String type, String param, String code, String message) {
        super(message);
        this.status = status;
        this.type = type;
        this.param = param;
        this.code = code;
    }

    /** A 400 about one request field. */
    static ApiError invalid(String param, String message) {
        return new ApiError(StatusCodes.BAD_REQUEST, "invalid_request_error", param, null, message);
    }

    StatusCode status() {
        return status;
    }

    String type() {
        return type;
    }

    String param() {
        return param;
    }

    String code() {
        return code;
    }
}
