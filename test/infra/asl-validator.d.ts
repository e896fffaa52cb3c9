// asl-validator 4 ships no type declarations; this is the part of its API the tests use.
declare module 'asl-validator' {
  interface AslValidationError {
    readonly message: string;
    readonly path?: string;
  }
  interface AslValidatorOptions {
    readonly checkPaths: boolean;
    readonly checkArn: boolean;
  }
  interface AslValidationResult {
    readonly isValid: boolean;
    readonly errors: AslValidationError[];
    errorsText(separator?: string): string;
  }
  function aslValidator(definition: unknown, options?: AslValidatorOptions): AslValidationResult;
  export = aslValidator;
}
