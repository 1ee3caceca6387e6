export const OPERATOR_VERSION = '0.1.0';
